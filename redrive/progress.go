package redrive

import "time"

// rate smooths the moved-per-second figure of progress reports. Only the
// progress goroutine and, after it stopped, the final report use it.
type rate struct {
	ewma      float64
	lastMoved int64
	lastTick  time.Time
}

func (e *engine) startProgress() func() {
	if e.opts.Progress == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				e.report(false)
			}
		}
	}()
	return func() { close(stop); <-done }
}

// report sends a progress snapshot.
func (e *engine) report(final bool) {
	if e.opts.Progress == nil {
		return
	}
	now := e.now()
	p := e.tally.snapshot()
	p.Total, p.Selected, p.Elapsed, p.Blocked, p.Done = e.total, e.totalSelected, now.Sub(e.start), e.flow.isBlocked(), final
	r := &e.rate
	if dt := now.Sub(r.lastTick).Seconds(); dt > 0 {
		inst := float64(p.Moved-r.lastMoved) / dt
		if r.ewma == 0 {
			r.ewma = inst
		} else {
			r.ewma = 0.7*r.ewma + 0.3*inst
		}
		r.lastMoved, r.lastTick = p.Moved, now
	}
	p.Rate = r.ewma
	if final && p.Elapsed > 0 {
		p.Rate = float64(p.Moved) / p.Elapsed.Seconds()
	}
	e.opts.Progress(p)
}
