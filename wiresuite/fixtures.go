package wiresuite

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/subspace/kbkit/wire"
)

// The setup the checks share: a fresh page with its nodes, a WebSocket, a
// subscription. A check that needs them takes them here, so that each
// fails the same way everywhere: a page that cannot be created is the
// check's "setup" step, a node that cannot be added its "setup:
// create-after nK" step, and a refused upgrade or subscription the
// WebSocket's own failure.

// setupPage is a fresh page (create-page, seq 1) with nodes n1..nN
// appended at its top level (seqs 2..N+1).
func (e *Env) setupPage(ctx context.Context, nodes int) (*page, error) {
	p, err := e.newPage(ctx)
	if err != nil {
		return nil, step("setup", err)
	}
	if err := e.addNodes(ctx, p, nodes); err != nil {
		return nil, err
	}
	return p, nil
}

// subscribed is a new WebSocket of the Env's device with the subscription
// id of path open (answered started), from after lastEventID when it is
// not nil. The caller closes it.
func (e *Env) subscribed(ctx context.Context, id any, path string, input any, lastEventID *string) (*WS, error) {
	w, err := e.ws(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.subscribe(ctx, id, path, input, lastEventID); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// subscribedTo is subscribed to kb.onPage of p.
func (e *Env) subscribedTo(ctx context.Context, id any, p *page, lastEventID *string) (*WS, error) {
	return e.subscribed(ctx, id, "kb.onPage", map[string]any{"page_id": p.id}, lastEventID)
}

// directoryInvalidations is subscribed (id "inv") to kb.onInvalidate's
// directory topic.
func (e *Env) directoryInvalidations(ctx context.Context) (*WS, error) {
	return e.subscribed(ctx, "inv", "kb.onInvalidate", map[string]any{"topics": []string{"directory"}}, nil)
}

// onWS runs fn with a new WebSocket of the Env's device.
func onWS(ctx context.Context, e *Env, fn func(w *WS) error) error {
	w, err := e.ws(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	return fn(w)
}

// onSocket runs fn on a fresh page and a WebSocket opened for it.
func onSocket(ctx context.Context, e *Env, fn func(p *page, w *WS) error) error {
	p, err := e.setupPage(ctx, 0)
	if err != nil {
		return err
	}
	return onWS(ctx, e, func(w *WS) error { return fn(p, w) })
}

// onSubscribed runs fn on a fresh page with nodes n1..nN and a WebSocket
// subscribed (id 1) to its kb.onPage from the start; the replay is fn's to
// read.
func onSubscribed(ctx context.Context, e *Env, nodes int, fn func(p *page, w *WS) error) error {
	p, err := e.setupPage(ctx, nodes)
	if err != nil {
		return err
	}
	w, err := e.subscribedTo(ctx, 1, p, nil)
	if err != nil {
		return err
	}
	defer w.Close()
	return fn(p, w)
}

// limitNeed is how a check treats the integer limit of kb.limits it
// exercises. none is the check's error when the limit is 0 or less: a
// failure where PROTOCOL.md 8 requires the limit, a skip where no limit is
// allowed. most is the largest limit the check exercises (0: any); above
// it the check returns over (a skip when the suite cannot go that far, a
// failure when the limit is too lax to be one), its message prefixed
// with "field n: ".
type limitNeed struct {
	none error
	most int
	over error
}

// needLimit is needLimits(field, also...) for a check that exercises the
// integer limit field: the limits and the field's value, or the check's
// error when that value is not one it can exercise (limitNeed).
func (e *Env) needLimit(ctx context.Context, field string, need limitNeed, also ...string) (*wire.Limits, int, error) {
	l, err := e.needLimits(ctx, append([]string{field}, also...)...)
	if err != nil {
		return nil, 0, err
	}
	n, ok := intLimit(l, field)
	switch {
	case !ok:
		return nil, 0, fmt.Errorf("the check is wrong: kb.limits has no integer field %q", field)
	case n <= 0:
		return nil, 0, need.none
	case need.most > 0 && n > need.most:
		prefix := fmt.Sprintf("%s %d: ", field, n)
		switch over := need.over.(type) {
		case skipError:
			return nil, 0, skipError{prefix + over.reason}
		case *Failure:
			return nil, 0, failf("%s%s", prefix, over.Message)
		}
		return nil, 0, fmt.Errorf("%s%w", prefix, need.over)
	}
	return l, n, nil
}

// intLimit is the integer field of l whose JSON name is field.
func intLimit(l *wire.Limits, field string) (int, bool) {
	v := reflect.ValueOf(*l)
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name == field && v.Field(i).CanInt() {
			return int(v.Field(i).Int()), true
		}
	}
	return 0, false
}
