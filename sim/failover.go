package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/subspace/kbkit/target"
)

// Failoverer is implemented by targets whose database can lose its primary
// machine and promote a standby (a fault).
type Failoverer interface {
	CanFailover() bool
	// Failover loses the primary (its processes killed, its data deleted),
	// promotes the standby and starts a new standby; stall is how long the
	// replication link lags first (0: none).
	Failover(ctx context.Context, stall time.Duration) error
}

// failoverStall is how long the replication link lags before the primary
// is lost: a synchronous primary acknowledges nothing meanwhile, an
// asynchronous one acknowledges what the standby never gets.
const failoverStall = 300 * time.Millisecond

// startFailover begins the failover fault at mid-seed. It runs beside the
// scheduler, which keeps sending (as clients do while a database fails
// over), so such a seed does not replay exactly; quiesce waits for it.
func (s *sim) startFailover() {
	f, ok := s.target.(Failoverer)
	if !ok || s.failover != nil {
		return
	}
	s.logf("failover: replication stalls %s, primary lost, standby promoted (fault)", failoverStall)
	s.rec.fault(nil, "failover: replication stalls %s, primary lost, standby promoted (fault)", failoverStall)
	s.stats.Failovers++
	done := make(chan error, 1)
	s.failover = done
	go func() { done <- f.Failover(s.ctx, failoverStall) }()
}

// awaitFailover waits for a failover begun by startFailover.
func (s *sim) awaitFailover() error {
	if s.failover == nil {
		return nil
	}
	err := <-s.failover
	s.failover = nil
	if err != nil {
		return fmt.Errorf("%w: failover: %v", target.ErrCannotRun, err)
	}
	s.logf("failover done: the new primary serves, a new standby streams")
	s.rec.fault(nil, "failover done: the new primary serves")
	return nil
}
