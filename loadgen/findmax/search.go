package findmax

import (
	"context"
	"errors"
	"math"
)

// Stages of the search a step belongs to.
const (
	StageDouble = "double" // doubling from the start rate until a step fails
	StageHalve  = "halve"  // halving from the start rate until a step passes
	StageBisect = "bisect" // between the highest pass and the lowest fail
)

// Plan bounds a search.
type Plan struct {
	// StartRate is the first step's target (operations per second).
	StartRate float64
	// MaxRate, when positive, caps the doubling: a step at MaxRate that
	// passes ends the search with no failing step.
	MaxRate float64
	// Resolution ends the bisection once the lowest failing rate is
	// within this fraction above the highest passing one (default 0.1).
	Resolution float64
	// MaxSteps bounds the number of steps (default 16).
	MaxSteps int
	// MinRate is the lowest rate halving tries (default 1/s).
	MinRate float64
	// MaxEditors, when above the run's editors, lets find-max double the
	// editors and run a rate again when a step ran out of editors with
	// its latencies held, up to this many (0: the editors are fixed).
	MaxEditors int
}

// Check fills p's defaults and refuses a plan that cannot run.
func (p *Plan) Check() error { return p.defaults() }

func (p *Plan) defaults() error {
	if p.StartRate <= 0 || math.IsNaN(p.StartRate) || math.IsInf(p.StartRate, 0) {
		return errors.New("findmax: the start rate must be a positive number")
	}
	if p.MaxRate < 0 || math.IsNaN(p.MaxRate) {
		return errors.New("findmax: the max rate must be positive (or 0: none)")
	}
	if p.MaxRate > 0 && p.MaxRate < p.StartRate {
		return errors.New("findmax: the max rate is below the start rate")
	}
	if p.Resolution == 0 {
		p.Resolution = 0.1
	}
	if p.Resolution <= 0 || p.Resolution >= 1 || math.IsNaN(p.Resolution) {
		return errors.New("findmax: the resolution must be in (0, 1)")
	}
	if p.MaxSteps == 0 {
		p.MaxSteps = 16
	}
	if p.MaxSteps < 1 {
		return errors.New("findmax: at least one step")
	}
	if p.MinRate <= 0 {
		p.MinRate = 1
	}
	if p.MaxEditors < 0 {
		return errors.New("findmax: the max editors must be positive (or 0: the editors are fixed)")
	}
	return nil
}

// Probe runs rate and says whether it met the objective, and in how many
// steps (at least one): a probe may run a rate again (find-max, with more
// editors), and the last step's pass is the rate's.
type Probe func(ctx context.Context, rate float64, stage string) (pass bool, steps int, err error)

// Outcome is where a search ended.
type Outcome struct {
	// Sustainable is the highest rate whose step passed (0: none did).
	Sustainable float64
	// Next is the lowest rate above Sustainable whose step failed (0: none
	// failed, the search reached MaxRate or ran out of steps).
	Next float64
	// Steps is the number of steps run (the probes' steps).
	Steps int
}

// Search runs the steps: from StartRate it doubles while steps pass (or
// halves while they fail), then bisects between the highest passing rate
// and the lowest failing one until they are within Resolution of each
// other or MaxSteps is reached. Rates are rounded to whole operations per
// second from 10/s up. An error from probe ends the search with it.
func Search(ctx context.Context, p Plan, probe Probe) (Outcome, error) {
	if err := p.defaults(); err != nil {
		return Outcome{}, err
	}
	var o Outcome
	run := func(rate float64, stage string) (bool, error) {
		pass, n, err := probe(ctx, rate, stage)
		o.Steps += max(n, 1)
		if err != nil {
			return false, err
		}
		if pass && rate > o.Sustainable {
			o.Sustainable = rate
		}
		if !pass && (o.Next == 0 || rate < o.Next) && rate > o.Sustainable {
			o.Next = rate
		}
		return pass, nil
	}
	rate := p.StartRate
	pass, err := run(rate, StageDouble)
	if err != nil {
		return o, err
	}
	switch {
	case pass:
		for o.Next == 0 && o.Steps < p.MaxSteps && (p.MaxRate == 0 || rate < p.MaxRate) {
			rate = roundRate(rate * 2)
			if p.MaxRate > 0 {
				rate = min(rate, p.MaxRate)
			}
			if _, err := run(rate, StageDouble); err != nil {
				return o, err
			}
		}
	default:
		for o.Sustainable == 0 && o.Steps < p.MaxSteps && rate/2 >= p.MinRate {
			rate = roundRate(rate / 2)
			if _, err := run(rate, StageHalve); err != nil {
				return o, err
			}
		}
	}
	for o.Sustainable > 0 && o.Next > 0 && o.Steps < p.MaxSteps && o.Next > o.Sustainable*(1+p.Resolution) {
		mid := roundRate((o.Sustainable + o.Next) / 2)
		if mid <= o.Sustainable || mid >= o.Next {
			break // whole rates leave nothing between them
		}
		if _, err := run(mid, StageBisect); err != nil {
			return o, err
		}
	}
	return o, ctx.Err()
}

// roundRate rounds a rate to a whole number from 10/s up, to two
// decimals below.
func roundRate(r float64) float64 {
	if r >= 10 {
		return math.Round(r)
	}
	return math.Round(r*100) / 100
}
