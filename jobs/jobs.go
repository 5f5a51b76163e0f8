// Package jobs runs bark tasks: synchronous barks in the request,
// asynchronous ones as durable background work in the store's tasks table,
// and the slots of bark schedules. It does not know HTTP.
//
// A worker claims a due task (FOR UPDATE SKIP LOCKED on PostgreSQL, the one
// writer on SQLite) with a lease that it renews while the effect runs. A
// task whose worker died is taken again once its lease has expired. Store
// effects are committed in the same transaction that marks the task
// succeeded, guarded by the lease token, so they happen exactly once;
// external messages carry ids derived from the task. A canceled task's
// context ends when the cancel reaches the worker: at once in the same
// process, and at the next lease renewal (which reads the task's status)
// when it was made by another process.
package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/internal/defaults"
	"github.com/yard-api/yard/internal/outage"
	"github.com/yard-api/yard/internal/tracing"
)

// Defaults of a Service.
const (
	DefaultWorkers      = 4
	DefaultPoll         = 500 * time.Millisecond
	DefaultLease        = 30 * time.Second
	DefaultHeartbeat    = time.Second
	DefaultMaxAttempts  = 5
	DefaultFetchWorkers = 2
	DefaultFetchPerUser = 1
)

const (
	// A task whose last try ended on a time limit (a fetch that stalled)
	// waits longer and stops sooner: it is tried at most timeoutAttempts
	// times in all, the retry after timeoutBackoff (doubling).
	timeoutAttempts = 2
	timeoutBackoff  = time.Minute
	// scheduleEvery is how often the scheduler looks for due slots.
	scheduleEvery = time.Second
	// syncTimeout bounds the effect of a synchronous bark.
	syncTimeout = time.Minute
)

// Config is what a Service is built from (New); zero values take the
// defaults above.
type Config struct {
	// DB is the store the tasks live in.
	DB      Store
	Effects *Effects
	Logger  *slog.Logger
	// Owner names this process in task leases.
	Owner string
	// Workers is the number of store-effect tasks (email, email-count,
	// record) run at once; FetchWorkers the number of fetch-code tasks, in
	// a pool of their own, so a slow fetch never holds up the others.
	Workers, FetchWorkers int
	// FetchPerUser bounds the fetch-code tasks running at once for the
	// dogs of one owner, across the processes sharing the store; a dog
	// never has two running.
	FetchPerUser int
	// Poll is how often idle workers look for due tasks (tasks enqueued by
	// this process wake them at once).
	Poll time.Duration
	// Lease is how long a claimed task stays with its worker without a
	// renewal; Heartbeat how often the worker renews it (and notices a
	// cancel made by another process).
	Lease, Heartbeat time.Duration
	// MaxAttempts bounds the tries of a task failing transiently.
	MaxAttempts int
	// Backoff is the wait before the next attempt (attempt counts from 1).
	Backoff func(attempt int) time.Duration
	// Observe, when set, is told how each run of a task ended: outcome is
	// succeeded, failed, retry, canceled or released.
	Observe func(effect, outcome string, d time.Duration)
	// Tracing, when set, traces each run of a task: a span whose parent
	// is the request that created the bark (its stored traceparent), in
	// whichever process it runs (docs/operations.md, "Metrics and
	// traces"). nil traces nothing.
	Tracing trace.TracerProvider
}

// Service runs the barks of one process. Build it with New.
type Service struct {
	Config

	// outage is set while the loops meet a store that cannot be reached,
	// so that an outage is logged once (logLoopError).
	outage    outage.Tracker
	wake      chan struct{}
	wakeFetch chan struct{}
	// running holds the cancel (context.CancelCauseFunc) of each task
	// this process runs, by bark id.
	running sync.Map
}

var (
	errCanceled = errors.New("bark canceled")
	errLost     = errors.New("task lease lost")
)

// New returns the service of cfg, its defaults filled in.
func New(cfg Config) *Service {
	s := &Service{Config: cfg}
	s.Workers = defaults.Positive(s.Workers, DefaultWorkers)
	s.Poll = defaults.Positive(s.Poll, DefaultPoll)
	s.Lease = defaults.Positive(s.Lease, DefaultLease)
	s.Heartbeat = defaults.Positive(s.Heartbeat, min(DefaultHeartbeat, s.Lease/3))
	s.MaxAttempts = defaults.Positive(s.MaxAttempts, DefaultMaxAttempts)
	if s.Backoff == nil {
		s.Backoff = Backoff
	}
	s.FetchWorkers = defaults.Positive(s.FetchWorkers, DefaultFetchWorkers)
	s.FetchPerUser = defaults.Positive(s.FetchPerUser, DefaultFetchPerUser)
	s.Owner = cmp.Or(s.Owner, "worker-"+yard.NewID())
	s.Logger = cmp.Or(s.Logger, slog.New(slog.DiscardHandler))
	s.wake = make(chan struct{}, s.Workers)
	s.wakeFetch = make(chan struct{}, s.FetchWorkers)
	return s
}

// Backoff is the default wait before attempt n+1: 1 s doubling per attempt
// up to 5 minutes, with ±20 % jitter so retries of many tasks spread out.
func Backoff(attempt int) time.Duration {
	d := min(time.Second<<min(max(attempt-1, 0), 9), 5*time.Minute)
	return d + time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
}

// Bark makes dog d bark with effect. Asynchronous barks (and every
// fetch-code bark) are stored as pending tasks for the workers; synchronous
// ones run the effect now and are stored finished. A synchronous effect
// that fails is stored failed and returned with an EUNAVAILABLE error.
func (s *Service) Bark(ctx context.Context, d *yard.Dog, effect string, async bool) (*yard.Bark, error) {
	if !yard.ValidEffect(effect) {
		return nil, yard.Invalid("Unknown bark effect.", yard.FieldError{Field: "effect", Message: "must be one of email, email-count, record, fetch-code"})
	}
	b := &yard.Bark{ID: yard.NewID(), DogID: d.ID, Effect: effect, Source: yard.BarkSourceRequest}
	if async || effect == yard.EffectFetchCode {
		// The run joins the request's trace, in any process.
		b.TraceParent = tracing.TraceParent(ctx)
		if err := s.DB.EnqueueBark(ctx, b); err != nil {
			return nil, err
		}
		s.Wake()
		return b, nil
	}
	if effect != yard.EffectRecord {
		ectx, cancel := context.WithTimeout(ctx, syncTimeout)
		res, err := s.Effects.Run(ectx, b, d)
		cancel()
		b.Output = res.Output
		if err != nil {
			s.Logger.Warn("synchronous bark failed", slog.String("bark", b.ID), slog.String("dog", d.ID), slog.String("error", err.Error()))
			if serr := s.DB.RecordFailedBark(context.WithoutCancel(ctx), b, err.Error()); serr != nil {
				return nil, serr
			}
			return b, yard.Errorf(yard.EUNAVAILABLE, "The bark message could not be delivered; the bark %s is stored as failed.", b.ID)
		}
	}
	if err := s.DB.RecordSyncBark(ctx, b); err != nil {
		return nil, err
	}
	return b, nil
}

// Cancel answers a DELETE of a bark: a pending or running bark is
// canceled (a running one in this process stops at once), a finished
// record is deleted; anything else is ECONFLICT.
func (s *Service) Cancel(ctx context.Context, dogID, id string) error {
	before, err := s.DB.CancelBark(ctx, dogID, id)
	if err != nil {
		return err
	}
	if before.Status == yard.BarkRunning {
		if cancel, ok := s.running.Load(id); ok {
			cancel.(context.CancelCauseFunc)(errCanceled)
		}
	}
	return nil
}

// CheckCodeURL applies the fetch policy of the effects' runner (the
// default policy when there is none) to a dog's codeUrl being written.
func (s *Service) CheckCodeURL(u string) error {
	p := &fetch.Policy{}
	if s.Effects != nil && s.Effects.Fetcher != nil && s.Effects.Fetcher.Policy != nil {
		p = s.Effects.Fetcher.Policy
	}
	return p.CheckURL(u)
}

// Wake tells idle workers of this process that a task may be due.
func (s *Service) Wake() {
	wake(s.wake, s.Workers)
	wake(s.wakeFetch, s.FetchWorkers)
}

func wake(ch chan struct{}, n int) {
	for range n {
		select {
		case ch <- struct{}{}:
		default:
			return
		}
	}
}

// Run runs the workers and the scheduler until ctx ends, then hands the
// tasks still running back to the store and returns.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range s.Workers {
		wg.Go(func() { s.work(ctx, yard.ClaimFilter{Kind: yard.ClaimStore}, s.wake) })
	}
	for range s.FetchWorkers {
		wg.Go(func() {
			s.work(ctx, yard.ClaimFilter{Kind: yard.ClaimFetch, FetchPerUser: s.FetchPerUser}, s.wakeFetch)
		})
	}
	wg.Go(func() { s.schedule(ctx) })
	wg.Wait()
}

func (s *Service) work(ctx context.Context, f yard.ClaimFilter, wake chan struct{}) {
	for ctx.Err() == nil {
		ran, err := s.runOneOf(ctx, f)
		if ctx.Err() == nil {
			s.logLoopError("bark worker", err)
		}
		if ran && err == nil {
			continue
		}
		t := time.NewTimer(s.Poll)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Service) schedule(ctx context.Context) {
	t := time.NewTicker(scheduleEvery)
	defer t.Stop()
	for {
		if _, err := s.Tick(ctx, ""); ctx.Err() == nil {
			s.logLoopError("bark scheduler", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick fires every due schedule slot (by the store's clock), or those of
// dog dogID only, and wakes the workers; it returns how many barks it
// created. The scheduler ticks every second for all dogs; a schedule set
// to start now (next 0) is fired for its dog before the change is
// answered, so it shows it (docs/barks.md).
func (s *Service) Tick(ctx context.Context, dogID string) (int, error) {
	n := 0
	for {
		fired, err := s.DB.FireDueSchedules(ctx, dogID, 100)
		n += len(fired)
		if err != nil {
			return n, err
		}
		for _, b := range fired {
			s.Logger.Info("scheduled bark", slog.String("bark", b.ID), slog.String("dog", b.DogID), slog.Time("slot", b.Slot))
		}
		if len(fired) < 100 {
			break
		}
	}
	if n > 0 {
		s.Wake()
	}
	return n, nil
}

// RunOne claims one due task of any effect (within the per-dog and
// per-user bounds of fetches) and runs it to its end. It reports whether
// there was a task.
func (s *Service) RunOne(ctx context.Context) (bool, error) {
	return s.runOneOf(ctx, yard.ClaimFilter{FetchPerUser: s.FetchPerUser})
}

func (s *Service) runOneOf(ctx context.Context, f yard.ClaimFilter) (bool, error) {
	b, token, err := s.DB.ClaimTaskOf(ctx, s.Owner, s.Lease, f)
	if err != nil || b == nil {
		return false, err
	}
	return true, s.runTask(ctx, b, token)
}

func (s *Service) runTask(ctx context.Context, b *yard.Bark, token string) error {
	log := s.Logger.With(slog.String("bark", b.ID), slog.String("dog", b.DogID), slog.String("effect", b.Effect), slog.Int("attempt", b.Attempts))
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.running.Store(b.ID, cancel)
	defer s.running.Delete(b.ID)

	// Renew the lease while the effect runs; a failed renewal means the
	// task was canceled (perhaps by another process) or taken over.
	hbCtx, hbStop := context.WithCancel(tctx)
	var hb sync.WaitGroup
	hb.Go(func() {
		t := time.NewTicker(s.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				err := s.DB.ExtendLease(tctx, b.ID, token, s.Lease)
				if errors.Is(err, yard.ErrLeaseLost) {
					cancel(errLost)
					return
				} else if err != nil && tctx.Err() == nil {
					log.Warn("lease renewal failed", slog.String("error", err.Error()))
				}
			}
		}
	})

	started := time.Now()
	span := s.startRun(ctx, b)
	defer span.End()
	res, err := s.execute(tracing.ContextWith(tctx, span), b)
	hbStop()
	hb.Wait()
	observe := func(outcome string) {
		if span.IsRecording() {
			span.SetAttributes(tracing.BarkOutcome.String(outcome))
			if outcome == yard.BarkFailed || outcome == "retry" {
				tracing.Failf(span, "bark "+outcome, "the effect failed")
			}
		}
		if s.Observe != nil {
			s.Observe(b.Effect, outcome, time.Since(started))
		}
	}

	// The finishing writes must happen even when ctx is ending (shutdown).
	wctx, wcancel := context.WithTimeout(tracing.ContextWith(context.WithoutCancel(ctx), span), 10*time.Second)
	defer wcancel()
	cause := context.Cause(tctx)
	switch {
	case err == nil:
		err := s.DB.CompleteTask(wctx, b, token, res)
		if errors.Is(err, yard.ErrLeaseLost) {
			log.Info("bark finished after it was canceled or taken over; nothing stored")
			return nil
		}
		if err == nil {
			log.Info("bark succeeded")
			observe(yard.BarkSucceeded)
		}
		return err
	case errors.Is(cause, errCanceled), errors.Is(cause, errLost):
		log.Info("bark stopped", slog.String("reason", cause.Error()))
		observe(yard.BarkCanceled)
		return nil
	case ctx.Err() != nil:
		// Shutdown: hand the task back for another worker or process.
		if rerr := s.DB.ReleaseTask(wctx, b.ID, token); rerr != nil && !errors.Is(rerr, yard.ErrLeaseLost) {
			return rerr
		}
		log.Info("bark handed back at shutdown")
		observe("released")
		return nil
	case storeAway(s.DB, err) != nil:
		// The store was away (a connection reset under a query, a refused
		// dial): the attempt says nothing of the effect. The task is
		// handed back, the attempt not counted, and never failed for it;
		// the error makes the worker wait a poll (and the outage is
		// logged once) before it claims again.
		log.Warn("bark interrupted: the store cannot be reached; handed back", slog.String("error", err.Error()))
		observe("released")
		if rerr := s.DB.ReleaseTask(wctx, b.ID, token); rerr != nil && !errors.Is(rerr, yard.ErrLeaseLost) {
			return rerr
		}
		return err
	default:
		// A task whose last try ended on a time limit waits longer and
		// stops sooner (timeoutAttempts, timeoutBackoff).
		what, attempts, backoff := "bark failed", s.MaxAttempts, s.Backoff
		if timedOut(err) {
			what, attempts = "bark timed out", timeoutAttempts
			backoff = func(attempt int) time.Duration { return timeoutBackoff << min(max(attempt-1, 0), 4) }
		}
		if (timedOut(err) || isTemporary(err)) && b.Attempts < attempts {
			wait := backoff(b.Attempts)
			log.Warn(what+"; will retry", slog.String("error", err.Error()), slog.Duration("wait", wait))
			observe("retry")
			return ignoreLost(s.DB.RetryTask(wctx, b.ID, token, wait, err.Error(), res.Output))
		}
		log.Warn(what, slog.String("error", err.Error()))
		observe(yard.BarkFailed)
		return ignoreLost(s.DB.FailTask(wctx, b.ID, token, err.Error(), res.Output))
	}
}

// startRun starts the span of one run of task b, the child of the span
// whose traceparent b carries (the request that created it, perhaps in
// another process); a no-op span without Tracing.
func (s *Service) startRun(ctx context.Context, b *yard.Bark) trace.Span {
	if s.Tracing == nil {
		return trace.SpanFromContext(context.Background())
	}
	_, span := s.Tracing.Tracer(tracing.Scope).Start(tracing.WithRemoteParent(ctx, b.TraceParent), "bark "+b.Effect,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(tracing.BarkID.String(b.ID), tracing.DogID.String(b.DogID),
			tracing.BarkEffect.String(b.Effect), tracing.BarkSource.String(b.Source), tracing.BarkAttempt.Int(b.Attempts)))
	return span
}

func ignoreLost(err error) error {
	if errors.Is(err, yard.ErrLeaseLost) {
		return nil
	}
	return err
}

// execute runs the effect of b, turning a panic into a permanent failure.
func (s *Service) execute(ctx context.Context, b *yard.Bark) (res yard.TaskResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = Permanent(fmt.Errorf("effect panicked: %v", v))
		}
	}()
	d, err := s.DB.FindDogCore(ctx, b.DogID)
	if err != nil {
		if yard.ErrorCode(err) == yard.ENOTFOUND {
			return res, Permanent(errors.New("the dog no longer exists"))
		}
		return res, &storeError{err}
	}
	return s.Effects.Run(ctx, b, d)
}

// logLoopError logs an error of a worker or scheduler loop (what names
// it); an unreachable store is logged once per outage (internal/outage).
func (s *Service) logLoopError(what string, err error) {
	s.outage.LoopError(s.Logger, what, err, err != nil && s.DB.Unavailable(err) != nil)
}
