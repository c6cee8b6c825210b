package pgprovider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Nodes returns the addresses (127.0.0.1:port) of the primary and of the
// standby ("" when there is none) of a sync-standby or async-standby
// server.
func (s *Server) Nodes() (primary, standby string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs, ok := s.b.(*replicaSet)
	if !ok {
		return "", "", errors.New("pgprovider: Nodes needs a replica set")
	}
	primary = fmt.Sprintf("127.0.0.1:%d", rs.primary.port)
	if rs.standby != nil {
		standby = fmt.Sprintf("127.0.0.1:%d", rs.standby.port)
	}
	return primary, standby, nil
}

// RouteReplication has the standby stream from upstream (host:port: a
// proxy in front of the primary, which a fault layer can cut) instead of
// from the primary directly, and waits until it streams (and, for
// sync-standby, is synchronous) again.
func (s *Server) RouteReplication(ctx context.Context, upstream string) error {
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return fmt.Errorf("pgprovider: RouteReplication: %w", err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return fmt.Errorf("pgprovider: RouteReplication: port %q", port)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rs, ok := s.b.(*replicaSet)
	if !ok || rs.standby == nil {
		return errors.New("pgprovider: RouteReplication needs a replica set with a standby")
	}
	conn, err := pgx.Connect(ctx, rs.standby.dsn())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	conninfo := fmt.Sprintf("host=%s port=%s user=postgres application_name=%s", host, port, standbyAppName)
	if _, err := conn.Exec(ctx, `ALTER SYSTEM SET primary_conninfo = `+quoteLiteral(conninfo)); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return err
	}
	// The WAL receiver restarts on the new conninfo; wait for the new one.
	return rs.awaitReplicationVia(ctx, port)
}

func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}

// awaitReplicationVia waits until the standby's WAL receiver streams from
// port, then until the primary counts it (as synchronous, for
// sync-standby).
func (rs *replicaSet) awaitReplicationVia(ctx context.Context, port string) error {
	ctx, cancel := context.WithTimeout(ctx, replicationTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, rs.standby.dsn())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for {
		var ok bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming' AND sender_port = $1::int)`, port).Scan(&ok)
		if err == nil && ok {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgprovider: the standby does not stream through port %s within %s (%v)", port, replicationTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return rs.awaitReplication(ctx, rs.standby.port)
}
