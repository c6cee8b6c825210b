package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/subspace/kbkit/internal/wsframe"
)

// encode marshals a reply.
func (c *wsConn) encode(v wsResponse) []byte {
	b, err := marshalWire(v)
	if err != nil {
		c.s.log.Error("websocket: encoding a reply", "err", err)
		return []byte(`{"id":null,"error":{"message":"internal error encoding a reply","code":-32603}}`)
	}
	return b
}

// send queues one reply; false once the connection is closing.
func (c *wsConn) send(v wsResponse) bool {
	return c.writeRaw(c.encode(v))
}

// writeRaw queues one text message; false once the connection is
// closing.
func (c *wsConn) writeRaw(b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.enqueueLocked(outMsg{op: wsframe.OpText, a: b})
}

// enqueueLocked queues a frame, starting the writer if it is not running.
func (c *wsConn) enqueueLocked(m outMsg) bool {
	if !c.queueLocked(m) {
		return false
	}
	c.startWriterLocked()
	return true
}

// queueLocked queues m without starting the writer; false: the socket is
// closing or broken.
func (c *wsConn) queueLocked(m outMsg) bool {
	if c.closing || c.broken {
		return false
	}
	c.out = append(c.out, m)
	return true
}

// claimWriterLocked makes the caller the socket's writer, unless one runs
// or the socket is broken.
func (c *wsConn) claimWriterLocked() bool {
	if c.writing || c.broken {
		return false
	}
	c.writing = true
	c.writerWG.Add(1)
	return true
}

func (c *wsConn) startWriterLocked() {
	if c.claimWriterLocked() {
		c.s.tasks.Go(c.writer)
	}
}

// startWriter starts the writer if anything is queued.
func (c *wsConn) startWriter() {
	c.mu.Lock()
	if len(c.out) > 0 {
		c.startWriterLocked()
	}
	c.mu.Unlock()
}

// writeQueued writes the outbound queue in this goroutine, as the writer
// would, unless a writer runs (it writes what was queued).
func (c *wsConn) writeQueued() {
	c.mu.Lock()
	if len(c.out) == 0 || !c.claimWriterLocked() {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.writer()
}

func (c *wsConn) signalRoomLocked() {
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
}

// writer writes the queue until it is empty: everything queued at once
// goes out in one write (frames of several subscriptions, a burst of
// events). Then it resubscribes the slow subscriptions and exits.
func (c *wsConn) writer() {
	defer c.writerWG.Done()
	var batch []outMsg
	for {
		c.mu.Lock()
		if len(c.out) == 0 || c.broken {
			c.out = nil
			c.writing = false
			slow := c.slow
			c.slow = nil
			c.signalRoomLocked()
			c.mu.Unlock()
			for _, sub := range slow {
				c.resubscribe(sub)
			}
			return
		}
		batch, c.out = c.out, batch[:0]
		c.signalRoomLocked()
		c.mu.Unlock()
		err := c.flush(batch)
		clear(batch)
		if err != nil {
			c.mu.Lock()
			c.broken = true
			c.mu.Unlock()
			c.cancel()
			_ = c.ws.nc.Close()
		}
	}
}

// eventBufs are the buffers a batch of frames (events, replies) is
// assembled in.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxWrite is the most a batch puts in one write.
const maxWrite = 64 << 10

// flush writes the frames of batch, in as few writes as maxWrite allows;
// each write must complete within WriteTimeout.
func (c *wsConn) flush(batch []outMsg) error {
	wsFrames.Add(int64(len(batch)))
	bp := eventBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	var err error
	for _, m := range batch {
		if m.event && c.s.opts.eventDelay > 0 {
			time.Sleep(c.s.opts.eventDelay)
		}
		buf = wsframe.AppendFrame(buf, m.op, m.a, m.b)
		if len(buf) >= maxWrite {
			if err = c.write(buf); err != nil {
				break
			}
			buf = buf[:0]
		}
	}
	if err == nil && len(buf) > 0 {
		err = c.write(buf)
	}
	if cap(buf) <= 4*maxWrite {
		*bp = buf[:0]
		eventBufs.Put(bp)
	}
	return err
}

// wsWrites and wsFrames count the writes of every connection's writer
// and the frames they carried (the tests check that writes are batched).
var wsWrites, wsFrames atomic.Int64

// write writes b within WriteTimeout. The deadline is moved only when
// less than WriteTimeout is left (to WriteTimeout and a sixteenth), not
// at every write: a write that blocks fails after WriteTimeout to 1/16
// more.
func (c *wsConn) write(b []byte) error {
	wsWrites.Add(1)
	now := time.Now()
	if wt := c.s.opts.WriteTimeout; c.deadline.Sub(now) < wt {
		c.deadline = now.Add(wt + wt/16)
		if err := c.ws.nc.SetWriteDeadline(c.deadline); err != nil {
			return err
		}
	}
	_, err := c.ws.nc.Write(b)
	return err
}

// drain is Shutdown for one connection: send reconnect, refuse new calls,
// let queued calls finish, close with 1001 (going away).
func (c *wsConn) drain(ctx context.Context) {
	c.draining.Store(true)
	c.writeRaw(reconnectMessage)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for c.pending.Load() > 0 && ctx.Err() == nil && c.ctx.Err() == nil {
		select {
		case <-t.C:
		case <-ctx.Done():
		case <-c.ctx.Done():
		}
	}
	// The read loop sees the client's close and ends the connection;
	// subscriptions end without "stopped" (the client resubscribes
	// elsewhere). A client that never answers the close handshake is cut
	// after closeTimeout, or when ctx ends.
	c.closeWith(websocket.StatusGoingAway, "server shutting down, reconnect")
	select {
	case <-c.done:
	case <-ctx.Done():
		_ = c.ws.CloseNow()
	}
	c.cancel()
}
