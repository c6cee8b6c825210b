package server

import (
	"context"
	"encoding/json"
	"runtime/debug"

	"github.com/subspace/kbkit/wire"

	"github.com/subspace/kbkit/server/store"
)

// safeCall is call with a panic turned into INTERNAL_SERVER_ERROR for
// that call and a log line with the stack: a bug reached by one client's
// input must not take the process (and every other client) down.
func (s *Server) safeCall(ctx context.Context, dev store.Device, path string, input json.RawMessage) (data any, cerr *callError) {
	defer func() {
		if p := recover(); p != nil {
			data, cerr = nil, s.recovered("call", p, "path", path, "device_id", dev.DeviceID)
		}
	}()
	return s.call(ctx, dev, path, input)
}

// recovered logs a recovered panic with its stack and returns the error
// the client gets.
func (s *Server) recovered(where string, p any, attrs ...any) *callError {
	s.log.Error("server: recovered panic in "+where, append(attrs, "panic", p, "stack", string(debug.Stack()))...)
	s.metrics.panics.Inc()
	return errorf(wire.CodeInternalServerError, "internal error")
}
