// Package webhooks delivers events to webhook subscriptions (docs/events.md,
// "Webhooks"). It does not know the API's HTTP side; it is an HTTP client.
//
// The store is the truth and any process may do any part of the work:
//
//   - fan-out: the events after each subscription's cursor become pending
//     delivery rows, once, whichever process does it (store.FanOutWebhooks);
//   - claim: workers take due rows with a lease, within bounds on the
//     attempts in flight per subscription and per person, so one slow
//     receiver holds at most its own slots;
//   - attempt: one POST of the CloudEvent with Standard Webhooks headers,
//     within attemptTimeout, to public addresses only (the fetch policy, checked
//     again on every connection), redirects not followed;
//   - finish: the outcome, the next attempt after a growing delay for 24
//     hours, and the disabling of a subscription failing that long. A
//     worker hands its outcome to one writer and takes its next attempt;
//     the writer records every outcome waiting in one transaction (group
//     commit, as bark writes do).
//
// Work starts when the process's events hub hands out a new event (on any
// process, through PostgreSQL notifications) and on a poll, so a lost
// wake-up delays a delivery by at most Poll.
package webhooks

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/internal/batch"
	"github.com/yard-api/yard/internal/defaults"
	"github.com/yard-api/yard/internal/outage"
	"github.com/yard-api/yard/internal/retention"
)

// Store is what deliveries need of the store (package store's *DB). Its
// errors are domain errors (*yard.Error, yard.ErrLeaseLost) or the
// engine's own.
type Store interface {
	// FanOutWebhooks turns new events into pending deliveries and
	// returns how many it created.
	FanOutWebhooks(ctx context.Context, batch int) (int, error)
	// HasDueWebhookDeliveries reports whether a delivery may be claimed.
	HasDueWebhookDeliveries(ctx context.Context) (bool, error)
	// ClaimWebhookDeliveries takes up to n due deliveries with a lease,
	// within the bounds on deliveries in flight.
	ClaimWebhookDeliveries(ctx context.Context, n int, lease time.Duration, b yard.DeliveryBounds) ([]*yard.WebhookClaim, error)
	// FinishWebhookDeliveries records attempts' outcomes, outs[i] that
	// of claims[i], in one transaction (and the next attempts, and
	// disablings): disabled[i] when attempt i disabled its subscription,
	// lost[i] when its claim was no longer held (nothing recorded). An
	// error records none.
	FinishWebhookDeliveries(ctx context.Context, claims []*yard.WebhookClaim, outs []yard.DeliveryOutcome) (disabled, lost []bool, err error)
	// ReleaseWebhookDelivery hands a claim back unmade.
	ReleaseWebhookDelivery(ctx context.Context, c *yard.WebhookClaim) error
	// PruneWebhookDeliveries removes rows created before before.
	PruneWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error)
	// Unavailable says whether err means the store cannot be reached
	// now (non-nil; the loops then log the outage once and keep polling).
	Unavailable(err error) *yard.Error
}

// Defaults of a Service (docs/events.md, "Webhooks").
const (
	DefaultWorkers    = 16
	DefaultPerWebhook = 8
	DefaultPoll       = time.Second
	// perPerson bounds the attempts in flight for the subscriptions of
	// one person, over every process sharing the store.
	perPerson = 8
	// attemptTimeout bounds one attempt (connecting, TLS, the answer).
	attemptTimeout = 10 * time.Second
	// attemptLease is how long a claimed attempt stays with its worker;
	// another process tries again after it when this one died.
	attemptLease  = 3 * attemptTimeout
	fanOutBatch   = 20
	pruneEvery    = time.Minute
	pruneBatch    = 10000
	finishTimeout = 10 * time.Second
	// finishBatch bounds the outcomes recorded in one transaction.
	finishBatch = 64
)

// Config is what a Service is built from (New); zero values take the
// defaults above.
type Config struct {
	// DB is the store the subscriptions and deliveries live in.
	DB Store
	// Render makes a delivery's body from an event: the CloudEvent JSON
	// that GET /v1/events gives (httpapi's Server.RenderEvent); required.
	Render func(*yard.Event) []byte
	// Hub wakes the fan-out when events are written (on any process);
	// nil leaves it to the poll.
	Hub *events.Hub
	// Policy says where deliveries may go: public addresses only, and the
	// hosts it allows (which may also take plain http://); nil is the
	// zero policy.
	Policy *fetch.Policy
	// TLSConfig is the receivers' TLS configuration (tests trust their
	// own certificate authority); nil is the system's roots.
	TLSConfig *tls.Config
	// Workers is the number of attempts this process makes at once.
	Workers int
	// PerWebhook bounds the attempts in flight for one subscription,
	// over every process sharing the store.
	PerWebhook int
	// Poll is the longest a due delivery or a new event waits when every
	// wake-up was lost.
	Poll time.Duration
	// Retention is how long delivery rows are kept (the events
	// retention).
	Retention time.Duration
	// Backoff is the wait after failed attempt n (from 1).
	Backoff func(attempt int) time.Duration
	// Now is the clock of the webhook-timestamp header; the store has its
	// own (they are the same outside tests).
	Now func() time.Time
	// Logger receives failures and disablings.
	Logger *slog.Logger
	// Tracing, when set, traces each attempt (a span whose traceparent
	// the request to the receiver carries; docs/operations.md, "Metrics
	// and traces"); nil traces nothing.
	Tracing trace.TracerProvider
}

// Service delivers the events of one process's share of the work. Build it
// with New and run it with Run.
type Service struct {
	Config

	client       *http.Client
	wakeDispatch chan struct{}
	busy         atomic.Int64
	outage       outage.Tracker
	finisher     *batch.Queue[finishing, finished]
	// recording holds a slot per outcome handed to the finisher and not
	// yet recorded (at most Workers); unrecorded counts them for Run.
	recording  chan struct{}
	unrecorded sync.WaitGroup
}

// finishing is an attempt's outcome on its way to the store; finished is
// what recording it said.
type finishing struct {
	claim *yard.WebhookClaim
	out   yard.DeliveryOutcome
}

type finished struct{ disabled, lost bool }

// New returns the service of cfg, its defaults filled in. cfg.Render is
// required.
func New(cfg Config) *Service {
	if cfg.Render == nil {
		panic("webhooks: Config.Render is not set")
	}
	s := &Service{Config: cfg}
	s.Workers = defaults.Positive(s.Workers, DefaultWorkers)
	s.PerWebhook = defaults.Positive(s.PerWebhook, DefaultPerWebhook)
	s.Poll = defaults.Positive(s.Poll, DefaultPoll)
	s.Retention = defaults.Positive(s.Retention, events.DefaultRetention)
	if s.Backoff == nil {
		s.Backoff = Backoff
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	s.Logger = cmp.Or(s.Logger, slog.New(slog.DiscardHandler))
	s.Policy = cmp.Or(s.Policy, &fetch.Policy{})
	s.client = s.newClient()
	s.wakeDispatch = make(chan struct{}, 1)
	// One transaction at a time: a batch is every outcome that came
	// while the previous one committed, so a lone outcome waits for
	// nothing, and on PostgreSQL one store connection (not one per
	// worker) waits on the subscriptions' row locks.
	s.finisher = &batch.Queue[finishing, finished]{Flights: 1, Max: finishBatch, Run: s.finishAll}
	s.recording = make(chan struct{}, s.Workers)
	return s
}

// backoffSteps are the waits after the first failed attempts; later ones
// wait backoffLast. With the 24-hour window that makes about 19 attempts.
var backoffSteps = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour}

const backoffLast = 2 * time.Hour

// Backoff is the default wait after failed attempt n: 5 s, 30 s, 2 min,
// 10 min, 30 min, 1 h, then every 2 h, each ±10 % so that the retries of
// many deliveries spread out.
func Backoff(attempt int) time.Duration {
	d := backoffLast
	if attempt >= 1 && attempt <= len(backoffSteps) {
		d = backoffSteps[attempt-1]
	}
	return d + time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Run fans events out and delivers them until ctx ends; attempts in flight
// then end and are handed back for another process, and Run returns once
// the outcomes of those made are recorded.
func (s *Service) Run(ctx context.Context) {
	work := make(chan *yard.WebhookClaim, s.Workers)
	var wg sync.WaitGroup
	for range s.Workers {
		wg.Go(func() {
			for c := range work {
				s.deliver(ctx, c)
				s.busy.Add(-1)
				signal(s.wakeDispatch)
			}
		})
	}
	// The workers end once dispatch has ended and closed work.
	wg.Go(func() { s.fanOutLoop(ctx) })
	wg.Go(func() { s.prune(ctx) })
	wg.Go(func() {
		s.dispatch(ctx, work)
		close(work)
	})
	wg.Wait()
	s.unrecorded.Wait()
}

// fanOutLoop fans out at once, then whenever the hub hands out new events
// (what came before is the first fan-out's) and on the poll.
func (s *Service) fanOutLoop(ctx context.Context) {
	var woken <-chan struct{} // without a hub: the poll alone
	if s.Hub != nil {
		var stop func()
		woken, stop = s.Hub.Wakeups()
		defer stop()
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-woken:
		case <-t.C:
		}
		_, err := s.FanOut(ctx)
		if ctx.Err() == nil {
			s.logLoopError("webhook fan-out", err)
		}
		t.Reset(s.Poll)
	}
}

// FanOut turns the events written since the last fan-out into pending
// deliveries (for every subscription, on behalf of every process) and
// wakes the workers; it returns how many it created.
func (s *Service) FanOut(ctx context.Context) (int, error) {
	n, err := s.DB.FanOutWebhooks(ctx, fanOutBatch)
	if n > 0 {
		signal(s.wakeDispatch)
	}
	return n, err
}

// dispatch claims due deliveries for the free workers and hands them over.
func (s *Service) dispatch(ctx context.Context, work chan<- *yard.WebhookClaim) {
	t := time.NewTimer(0)
	defer t.Stop()
	full := false // the last claim got all it asked for: more may be due
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wakeDispatch:
		case <-t.C:
		}
		n := s.Workers - int(s.busy.Load())
		// The claim is not cut short by a stop: a claim committed while
		// its answer was being read would leave its deliveries leased,
		// to nobody, until the lease ends. Its deliveries go to the
		// workers whatever happens, and a worker hands an attempt back at
		// once when the service is stopping (deliver).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		claims, err := s.claim(cctx, n, !full)
		cancel()
		if ctx.Err() == nil {
			s.logLoopError("webhook claims", err)
		}
		full = n > 0 && len(claims) == n
		s.busy.Add(int64(len(claims)))
		for _, c := range claims {
			work <- c // never blocks: one slot per free worker
		}
		t.Reset(s.Poll)
	}
}

// claim takes up to n due deliveries. With look, it first asks whether
// any is due (a read), so that an idle service takes no write
// transaction; a backlog's claims skip it.
func (s *Service) claim(ctx context.Context, n int, look bool) ([]*yard.WebhookClaim, error) {
	if n <= 0 {
		return nil, nil
	}
	if look {
		due, err := s.DB.HasDueWebhookDeliveries(ctx)
		if err != nil || !due {
			return nil, err
		}
	}
	return s.DB.ClaimWebhookDeliveries(ctx, n, attemptLease, yard.DeliveryBounds{PerWebhook: s.PerWebhook, PerPerson: perPerson})
}

// deliver makes one attempt and hands its outcome to the finisher, which
// records it later (unrecorded counts it until then); at shutdown an
// unfinished attempt is handed back instead. The worker goes on to its
// next attempt without waiting for the commit: the attempt's row stays
// leased (in flight, for the bounds) until it is recorded, and an outcome
// lost with the process is the attempt made again when its lease ends, as
// when the process dies mid-attempt. At most Workers outcomes wait at
// once; a worker that would make more waits for a slot.
func (s *Service) deliver(ctx context.Context, c *yard.WebhookClaim) {
	d := c.Delivery
	log := s.Logger.With(slog.String("webhook", d.WebhookID), slog.String("event", d.Event.ID.String()), slog.Int("attempt", d.Attempt))
	out, detail := s.attempt(ctx, c)
	if detail != nil {
		log = log.With(slog.String("detail", detail.Error()))
	}
	if ctx.Err() != nil && !out.Succeeded {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		if err := s.DB.ReleaseWebhookDelivery(wctx, c); err != nil && !errors.Is(err, yard.ErrLeaseLost) {
			log.Warn("webhook delivery not handed back", slog.String("error", err.Error()))
		}
		return
	}
	if !out.Succeeded {
		out.RetryIn = s.Backoff(d.Attempt)
	}
	s.recording <- struct{}{}
	s.unrecorded.Go(func() {
		defer func() {
			<-s.recording
			// Its subscription and owner may have room again.
			signal(s.wakeDispatch)
		}()
		s.record(c, out, log)
	})
}

// record has the finisher record an outcome and says how it went. It
// waits for its batch whatever happens (the batch bounds its own time),
// so that no more than Workers outcomes are ever queued.
func (s *Service) record(c *yard.WebhookClaim, out yard.DeliveryOutcome, log *slog.Logger) {
	r, err := s.finisher.Do(context.Background(), finishing{c, out})
	switch {
	case err == nil && r.lost:
		log.Info("webhook attempt finished after its subscription or lease was gone; nothing stored")
	case err != nil:
		log.Error("webhook attempt not recorded", slog.String("error", err.Error()))
	case out.Succeeded:
		log.Debug("webhook delivered", slog.Int("code", out.Code))
	case r.disabled:
		log.Warn("webhook disabled: its deliveries failed for 24 hours", slog.String("error", out.Error))
	default:
		log.Info("webhook attempt failed; will retry", slog.String("error", out.Error), slog.Duration("wait", out.RetryIn))
	}
}

// finishAll records a batch of outcomes in one transaction.
func (s *Service) finishAll(items []finishing, res []batch.Result[finished]) {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	claims, outs := make([]*yard.WebhookClaim, len(items)), make([]yard.DeliveryOutcome, len(items))
	for i, it := range items {
		claims[i], outs[i] = it.claim, it.out
	}
	disabled, lost, err := s.DB.FinishWebhookDeliveries(ctx, claims, outs)
	for i := range res {
		if err != nil {
			res[i].Err = err
		} else {
			res[i].Val = finished{disabled: disabled[i], lost: lost[i]}
		}
	}
}

// prune removes delivery rows older than the retention, once a minute.
func (s *Service) prune(ctx context.Context) {
	retention.Run(ctx, pruneEvery, pruneBatch, func(ctx context.Context, limit int) (int, error) {
		return s.DB.PruneWebhookDeliveries(ctx, s.Now().Add(-s.Retention), limit)
	}, func(err error) { s.logLoopError("webhook pruning", err) })
}

// logLoopError logs an error of a loop; an unreachable store is logged
// once per outage.
func (s *Service) logLoopError(what string, err error) {
	s.outage.LoopError(s.Logger, what, err, err != nil && s.DB.Unavailable(err) != nil)
}
