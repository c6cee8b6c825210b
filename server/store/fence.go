package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// OpenOptions are Open's options.
type OpenOptions struct {
	// Fence: use only a database server that is a primary (not in
	// recovery) and, when synchronous_standby_names is set, has a
	// synchronous standby streaming from it. A connection to any other
	// server is closed when acquired and the call answered ErrFenced
	// (retryable): an old primary cut off from its standby, still
	// accepting connections after the standby was promoted, serves
	// neither reads nor writes. Each server is checked again at most
	// every fenceEvery. pg_stat_replication must be readable (a superuser
	// or pg_monitor); see spec/PROTOCOL.md section 8 for the window left.
	Fence bool
}

// ErrFenced: the database server is not a primary with its synchronous
// standby; retryable.
var ErrFenced = fmt.Errorf("%w: fenced: the database server is not a primary with its synchronous standby", ErrRetryable)

// fenceEvery is how long a server's verdict is trusted.
const fenceEvery = 250 * time.Millisecond

// fenceCheckTimeout bounds one check of a server.
const fenceCheckTimeout = 2 * time.Second

const sqlFit = `SELECT NOT pg_is_in_recovery() AND (current_setting('synchronous_standby_names') = '' OR EXISTS (
	SELECT 1 FROM pg_stat_replication WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')))`

type fence struct {
	mu      sync.Mutex
	checked map[string]fenceVerdict // by the server's address
	refused int64
}

type fenceVerdict struct {
	fit bool
	at  time.Time
}

// prepare is the pool's PrepareConn: a connection to an unfit server is
// destroyed and the call fails with ErrFenced.
func (f *fence) prepare(ctx context.Context, c *pgx.Conn) (bool, error) {
	key := c.PgConn().Conn().RemoteAddr().String()
	f.mu.Lock()
	v, ok := f.checked[key]
	f.mu.Unlock()
	if !ok || time.Since(v.at) > fenceEvery {
		var fit bool
		// A connection cut off by a partition must not hold its caller (or
		// its pool slot) longer than this.
		cctx, cancel := context.WithTimeout(ctx, fenceCheckTimeout)
		err := c.QueryRow(cctx, sqlFit).Scan(&fit)
		cancel()
		if err != nil {
			return false, classify(err)
		}
		v = fenceVerdict{fit: fit, at: time.Now()}
		f.mu.Lock()
		if f.checked == nil {
			f.checked = map[string]fenceVerdict{}
		}
		f.checked[key] = v
		f.mu.Unlock()
	}
	if !v.fit {
		f.mu.Lock()
		f.refused++
		f.mu.Unlock()
		return false, ErrFenced
	}
	return true, nil
}

// Fenced counts the acquisitions refused by the fence since Open.
func (s *Store) Fenced() int64 {
	s.fence.mu.Lock()
	defer s.fence.mu.Unlock()
	return s.fence.refused
}

// validateFit refuses a new connection to an unfit server (pgconn then
// tries the DSN's next host).
func validateFit(ctx context.Context, pc *pgconn.PgConn) error {
	res := pc.ExecParams(ctx, sqlFit, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return res.Err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 || string(res.Rows[0][0]) != "t" {
		return ErrFenced
	}
	return nil
}
