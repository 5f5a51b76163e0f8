package webhooks

import (
	"context"
	"sync"
)

// DeliverDue claims the deliveries due now (as many as there are workers)
// and makes their attempts, all at once; it returns how many it made. Run
// does this continuously; tests call it to step through time.
func (s *Service) DeliverDue(ctx context.Context) (int, error) {
	claims, err := s.claim(ctx, s.Workers, true)
	var wg sync.WaitGroup
	for _, c := range claims {
		wg.Go(func() { s.deliver(ctx, c) })
	}
	wg.Wait()
	s.unrecorded.Wait()
	return len(claims), err
}
