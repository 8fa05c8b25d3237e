package brokertest

// The fault scenarios and the checks they share.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ---------------------------------------------------------------------------
// Checks

// outcome is what a trial left behind.
type outcome struct {
	lost, duplicates, leftInSource int
	// serverDuplicates are the duplicates of messages dlq sent only once
	// (counted on the wire, SQS): the server stored a send twice, or kept
	// a copy it should not have. They are the emulator's, not dlq's.
	serverDuplicates int
}

// dlqDuplicates are the duplicates dlq's own sends account for.
func (o outcome) dlqDuplicates() int { return o.duplicates - o.serverDuplicates }

// account drains the source and the destination and checks that every ID
// is in one of them exactly as the guarantees allow.
func account(t testing.TB, b FaultHarness, src, dst string, want []string) outcome {
	t.Helper()
	inSrc := b.Drain(t, src)
	inDst := b.Drain(t, dst)
	var o outcome
	for _, n := range inSrc {
		o.leftInSource += n
	}
	for _, id := range want {
		if inSrc[id]+inDst[id] == 0 {
			o.lost++
			if o.lost <= 5 {
				t.Errorf("message %s is in neither the source nor the destination", id)
			}
		}
		if n := inDst[id]; n > 1 {
			o.duplicates += n - 1
			if sent, ok := b.Wire().Sends(dst, id); ok {
				o.serverDuplicates += max(0, (n-1)-max(0, sent-1))
			}
		}
	}
	wanted := make(map[string]bool, len(want))
	for _, id := range want {
		wanted[id] = true
	}
	for id := range inDst {
		if !wanted[id] {
			t.Errorf("the destination holds a message nobody sent: %q", id)
		}
	}
	return o
}

// redriveArgs are the arguments of one redrive from src to dst.
func redriveArgs(b FaultHarness, src, dst string, extra ...string) []string {
	args := append([]string{"redrive", src, "--to", "queue:" + dst, "--output", "json", "--yes",
		"--window", strconv.Itoa(FaultWindow), "--concurrency", strconv.Itoa(FaultConcurrency)}, b.Args()...)
	return append(args, extra...)
}

// ---------------------------------------------------------------------------
// 1. SIGKILL at random moments

type killTally struct {
	trials, early, lost, duplicates, resumed, inFlight, ackedOnSight int
	// maybeNotAcked are acknowledgements the resume report named as
	// possibly not received by the broker.
	maybeNotAcked int
	// beyondReport are duplicates the resume report did not account for
	// (in flight, or acknowledged in the run's last moments).
	beyondReport int
	// rerunHidden are finishing runs that reported messages still hidden
	// and were followed by the --resume they advised.
	rerunHidden int
}

// killTrials kills dlq redrive at ten or more random moments of a redrive of
// n messages and checks each time that nothing was lost, that duplicates
// stay within what dlq holds unacknowledged, and that --resume finishes the
// move. The kills come one after the other; the finishing runs then go
// together (on SQS each waits for the messages its killed run had hidden,
// up to the visibility timeout).
//
// A kill moment is a point of progress, not of time: the trial kills dlq
// once the destination holds a random share of the messages (up to 90%),
// so that a slow or busy machine moves the moments with the run. One trial
// in five kills at a random instant of the first 300 ms instead, before or
// while the run starts its journal.
func killTrials(t *testing.T, b FaultHarness, n int) {
	rng := faultRand(t)
	started := time.Now()

	// A first, undisturbed run: nothing lost, nothing twice.
	src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
	want := ids("base", n)
	b.Fill(t, src, want)
	p := runDLQ(t, t.TempDir(), redriveArgs(b, src, dst)...)
	if p.code != exitOK {
		t.Fatalf("undisturbed redrive: exit %d\n%s", p.code, p.errOut.String())
	}
	if o := account(t, b, src, dst, want); o.lost != 0 || o.duplicates != 0 || o.leftInSource != 0 {
		t.Fatalf("undisturbed redrive: %+v", o)
	}
	t.Logf("%s: undisturbed redrive of %d messages took %s", b.Name(), n, p.took.Round(time.Millisecond))

	type trial struct {
		n        int
		src, dst string
		want     []string
		state    string
		at       string // the kill moment
		resumed  bool
		finish   *proc
	}
	var trials []*trial
	var tl killTally
	for attempt := 0; len(trials) < 10; attempt++ {
		if attempt >= 30 {
			t.Fatalf("only %d of 30 kills landed while dlq ran", len(trials))
		}
		tr := &trial{n: len(trials) + 1, state: t.TempDir(), src: b.Queue(t, "src"), dst: b.Queue(t, "dst"),
			want: ids(fmt.Sprintf("t%02d", attempt), n)}
		b.Fill(t, tr.src, tr.want)
		early := rng.IntN(5) == 0
		delay := time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
		target := 1 + rng.IntN(n*9/10)
		p := startDLQ(t, tr.state, redriveArgs(b, tr.src, tr.dst)...)
		if early {
			tr.at = "after " + delay.Round(time.Millisecond).String()
			select {
			case <-p.done:
			case <-time.After(delay):
			}
		} else {
			tr.at = fmt.Sprintf("at %d of %d moved", target, n)
			for !p.exited() && b.Count(t, tr.dst) < target {
				time.Sleep(time.Millisecond)
			}
		}
		if p.exited() {
			// The redrive finished before the kill moment came.
			if p.code != exitOK {
				t.Fatalf("attempt %d: exit %d\n%s", attempt, p.code, p.errOut.String())
			}
			tl.early++
			if o := account(t, b, tr.src, tr.dst, tr.want); o.lost != 0 || o.duplicates != 0 || o.leftInSource != 0 {
				t.Fatalf("attempt %d (finished before the kill): %+v", attempt, o)
			}
			continue
		}
		p.kill(t)
		trials = append(trials, tr)

		// Right after the kill every message is somewhere (SQS counts the
		// ones the dead process still hides; RabbitMQ returns them when it
		// drops the consumer).
		poll(t, 30*time.Second, "the killed consumer's messages back in the source", func() bool { return b.Settled(t, tr.src) })
		// The broker notices each of the dead process's connections on its
		// own, so on a busy machine a count can run behind for a moment. A
		// shortfall that lasts fails the test, but the trial still goes on
		// to its finishing run and the final count, which tell a message
		// counted late from one lost.
		var src, dst int
		deadline := time.Now().Add(30 * time.Second)
		for {
			if src, dst = b.Count(t, tr.src), b.Count(t, tr.dst); src+dst >= n || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if src+dst < n {
			t.Errorf("trial %d (kill %s): 30 s after the kill %d messages in the source and %d in the destination, %d in all, want at least %d",
				tr.n, tr.at, src, dst, src+dst, n)
		}
	}

	// Finish every trial: --resume when the run had started its journal, a
	// plain re-run when the kill came before it (or after its end line).
	for _, tr := range trials {
		args := redriveArgs(b, tr.src, tr.dst)
		if tr.resumed = interrupted(tr.state); tr.resumed {
			args = append(args, "--resume")
			tl.resumed++
		}
		tr.finish = startDLQ(t, tr.state, args...)
	}
	for _, tr := range trials {
		r := tr.finish
		code := r.wait(t, 4*time.Minute)
		if code == exitPartial && r.summary(t).Hidden > 0 {
			// The finishing run moved everything it could see and said
			// that the source still hides messages (a receive whose
			// answer an emulator lost under load hides them for the
			// visibility timeout) and that --resume moves them once
			// they are back: do as it says, once.
			t.Logf("trial %d: finishing run exit 3: %s", tr.n, strings.TrimSpace(r.errOut.String()))
			tl.rerunHidden++
			poll(t, 5*time.Minute, "the hidden messages to come back", func() bool {
				if h, ok := b.(HeldCounter); ok {
					return h.Held(t, tr.src) == 0
				}
				return b.Settled(t, tr.src)
			})
			again := startDLQ(t, tr.state, append(redriveArgs(b, tr.src, tr.dst), "--resume")...)
			if code = again.wait(t, 4*time.Minute); code != exitOK {
				t.Fatalf("trial %d (kill %s): finishing run exit 3, then --resume exit %d\n%s\n%s", tr.n, tr.at, code, r.errOut.String(), again.errOut.String())
			}
			r = again
		}
		if code != exitOK {
			t.Fatalf("trial %d (kill %s): finishing run exit %d\n%s", tr.n, tr.at, code, r.errOut.String())
		}
		// The resume report is the first finishing run's: it resumed the
		// killed run.
		sum := tr.finish.summary(t)
		inFlight, maybe := 0, 0
		if sum.Resumed != nil {
			inFlight, maybe = sum.Resumed.InFlight, sum.Resumed.MaybeNotAcked
			tl.inFlight += inFlight
			tl.maybeNotAcked += maybe
			tl.ackedOnSight += int(sum.Resumed.AckedOnSight)
		}
		o := account(t, b, tr.src, tr.dst, tr.want)
		tl.trials++
		tl.lost += o.lost
		tl.duplicates += o.duplicates
		beyond := max(0, o.duplicates-inFlight-maybe)
		tl.beyondReport += beyond
		t.Logf("trial %d: killed %s; resumed=%v in_flight=%d maybe_not_acked=%d acked_on_sight=%d finish_took=%s; lost=%d duplicates=%d left=%d",
			tr.n, tr.at, tr.resumed, inFlight, maybe, ackedOnSight(sum), r.took.Round(time.Millisecond), o.lost, o.duplicates, o.leftInSource)
		if tr.resumed && beyond > 0 {
			t.Errorf("trial %d: %d duplicates, but the resume report named only %d in flight and %d possibly not acknowledged", tr.n, o.duplicates, inFlight, maybe)
		}
		if o.lost != 0 || o.leftInSource != 0 {
			t.Errorf("trial %d: lost %d, %d left in the source after the finishing run\n%s", tr.n, o.lost, o.leftInSource, r.errOut.String())
		}
		if o.duplicates > b.Prefetch() {
			t.Errorf("trial %d: %d duplicates, more than the %d deliveries dlq holds unacknowledged at most", tr.n, o.duplicates, b.Prefetch())
		}
		if inFlight > FaultInFlight {
			t.Errorf("trial %d: the journal had %d messages in flight, more than window × (concurrency+1) = %d", tr.n, inFlight, FaultInFlight)
		}
	}
	wired := b.Wire().Check(t)
	t.Logf("fault tally: scenario=sigkill %s backend=%s messages=%d trials=%d lost=%d duplicates=%d resumed=%d in_flight=%d maybe_not_acked=%d acked_on_sight=%d duplicates_beyond_report=%d finished_before_kill=%d reran_after_hidden=%d removals_checked_on_wire=%d took=%s",
		b.Server(), b.Name(), n, tl.trials, tl.lost, tl.duplicates, tl.resumed, tl.inFlight, tl.maybeNotAcked, tl.ackedOnSight, tl.beyondReport, tl.early, tl.rerunHidden, wired, time.Since(started).Round(time.Second))
}

func ackedOnSight(s runSummary) int64 {
	if s.Resumed == nil {
		return 0
	}
	return s.Resumed.AckedOnSight
}

// ---------------------------------------------------------------------------
// 2–3. Connections closed and servers restarted mid-run

// disruption is a fault injected while dlq redrives.
type disruption struct {
	name string
	// inject runs once the redrive has moved a fifth of the messages,
	// while dlq is frozen (SIGSTOP), so the fault is in place before dlq
	// can take another step however slow the machine is; it may block (a
	// restart returns once the server is back) and may let dlq go on
	// earlier with p.cont().
	inject func(t *testing.T, p *proc)
	// rerun are the extra arguments of the run that finishes the move.
	rerun []string
	// before, if set, runs once the source is filled, before dlq starts.
	before func(t *testing.T, src string)
}

// disruptRun redrives n messages at rate messages/s, injects d mid-run, and
// checks that dlq exits with 0 (it rode the fault out) or 3 (partly done),
// that nothing is lost, and that a re-run moves the rest.
func disruptRun(t *testing.T, b FaultHarness, n int, rate string, d disruption) {
	started := time.Now()
	state := t.TempDir()
	src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
	want := ids("d", n)
	b.Fill(t, src, want)
	if d.before != nil {
		d.before(t, src)
	}
	p := startDLQ(t, state, redriveArgs(b, src, dst, "--rate", rate)...)
	poll(t, 2*time.Minute, "a fifth of the messages moved", func() bool {
		if p.exited() {
			t.Fatalf("dlq ended before the fault: exit %d\n%s", p.code, p.errOut.String())
		}
		return b.Count(t, dst) >= n/5
	})
	p.stop(t)
	atFault := b.Count(t, dst)
	if p.exited() || atFault >= n {
		p.cont()
		t.Fatalf("%s: dlq had moved %d of %d before the fault could be put in place", d.name, atFault, n)
	}
	d.inject(t, p)
	p.cont()
	// Still running once the fault is over: dlq rode it out (or is about
	// to fail on it); either way it struck mid-run.
	alive := !p.exited()
	code := p.wait(t, 3*time.Minute)
	if code != exitOK && code != exitPartial {
		t.Fatalf("%s: exit %d, want 0 or 3 (partly done)\n%s", d.name, code, p.errOut.String())
	}
	first := p.summary(t)
	if code == exitPartial && (first.Moved == 0 || first.Moved >= int64(n)) {
		t.Errorf("%s: exit 3 (partly done) after moving %d of %d", d.name, first.Moved, n)
	}
	t.Logf("%s: first run exit %d after moving %d of %d; stderr: %s", d.name, code, first.Moved, n, strings.TrimSpace(p.errOut.String()))

	args := redriveArgs(b, src, dst)
	how := "none"
	if first.Moved < int64(n) || code != exitOK {
		how = "plain"
		if interrupted(state) {
			args = append(args, d.rerun...)
			if len(d.rerun) > 0 {
				how = strings.TrimPrefix(strings.Join(d.rerun, " "), "--")
			}
		}
		// The re-run comes at once, as an operator's would, while a
		// quorum queue may still be electing a leader: dlq must wait for
		// it rather than read the queue as empty.
		r := runDLQ(t, state, args...)
		if r.code == exitPartial && r.summary(t).Hidden > 0 && strings.Contains(r.errOut.String(), "held unacknowledged") {
			// The re-run said that some messages are still held by the
			// interrupted run's connection (a node that died with it is
			// noticed only after about a minute), and that --resume moves
			// them once they are back: do as it says.
			t.Logf("%s: re-run exit 3: %s", d.name, strings.TrimSpace(r.errOut.String()))
			back := time.Now()
			poll(t, 5*time.Minute, "the held messages to come back", func() bool {
				if h, ok := b.(HeldCounter); ok {
					return h.Held(t, src) == 0
				}
				return b.Settled(t, src)
			})
			t.Logf("%s: the held messages were back after %s", d.name, time.Since(back).Round(time.Second))
			how += ", " + how
			r = runDLQ(t, state, args...)
		}
		if r.code != exitOK {
			t.Fatalf("%s: re-run exit %d\n%s", d.name, r.code, r.errOut.String())
		}
	}
	o := account(t, b, src, dst, want)
	wired := b.Wire().Check(t)
	t.Logf("fault tally: scenario=%s %s backend=%s messages=%d trials=1 lost=%d duplicates=%d server_duplicates=%d resent=%d at_fault=%d first_exit=%d first_moved=%d not_returned=%d alive_after_fault=%v rerun=%s removals_checked_on_wire=%d took=%s",
		d.name, b.Server(), b.Name(), n, o.lost, o.duplicates, o.serverDuplicates, first.Resent, atFault, code, first.Moved, first.NotReturned, alive, how, wired, time.Since(started).Round(time.Second))
	if o.lost != 0 || o.leftInSource != 0 {
		t.Errorf("%s: lost %d, %d left in the source after the re-run", d.name, o.lost, o.leftInSource)
	}
	if how == "none" && o.dlqDuplicates() > int(first.Resent) {
		// A run that rode the fault out and said nothing of duplicates
		// must have caused none beyond those it reports as sent again.
		// A duplicate of a message dlq sent once on the wire is the
		// server's (an emulator that stores a send twice over a restart).
		t.Errorf("%s: %d duplicates (%d of them the server's) after a clean exit that reported %d messages sent again", d.name, o.duplicates, o.serverDuplicates, first.Resent)
	}
	if o.dlqDuplicates() > b.Prefetch() {
		t.Errorf("%s: %d duplicates of dlq's sends, more than the %d deliveries dlq holds unacknowledged at most", d.name, o.dlqDuplicates(), b.Prefetch())
	}
}

// ---------------------------------------------------------------------------
// 4. The broker blocks dlq's publishers (RabbitMQ: connection.blocked)

// blockedRun redrives n messages at rate messages/s, has the broker block
// dlq's publishers once a tenth moved, and checks that dlq says it paused,
// moves nothing meanwhile, resumes when the block lifts, and moves every
// message exactly once.
func blockedRun(t *testing.T, b Blocker, n int, rate string) {
	started := time.Now()
	src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
	want := ids("b", n)
	b.Fill(t, src, want)

	p := startDLQ(t, t.TempDir(), redriveArgs(b, src, dst, "--rate", rate)...)
	poll(t, time.Minute, "a tenth of the messages moved", func() bool {
		if p.exited() {
			t.Fatalf("dlq ended before the alarm: exit %d\n%s", p.code, p.errOut.String())
		}
		return b.Count(t, dst) >= n/10
	})
	// dlq is frozen while the alarm goes up, so it cannot finish first.
	p.stop(t)
	if moved := b.Count(t, dst); p.exited() || moved >= n {
		p.cont()
		t.Fatalf("dlq had moved %d of %d before the alarm could be raised", moved, n)
	}
	restore := b.Block(t)
	p.cont()
	poll(t, 2*time.Minute, "dlq's notice that it paused", func() bool {
		if p.exited() {
			t.Fatalf("dlq ended under the memory alarm: exit %d\n%s", p.code, p.errOut.String())
		}
		return strings.Contains(p.errOut.String(), "paused")
	})
	// While blocked nothing more arrives at the destination.
	atPause := b.Count(t, dst)
	if p.exited() {
		t.Fatal("dlq ended while the broker blocked it")
	}
	restore()
	if code := p.wait(t, 2*time.Minute); code != exitOK {
		t.Fatalf("exit %d after the alarm cleared\n%s", code, p.errOut.String())
	}
	stderr := p.errOut.String()
	if !strings.Contains(stderr, "resumed") {
		t.Errorf("no notice that the run resumed:\n%s", stderr)
	}
	sum := p.summary(t)
	o := account(t, b, src, dst, want)
	wired := b.Wire().Check(t)
	t.Logf("fault tally: scenario=connection-blocked %s backend=%s messages=%d trials=1 lost=%d duplicates=%d moved=%d at_pause=%d removals_checked_on_wire=%d took=%s",
		b.Server(), b.Name(), n, o.lost, o.duplicates, sum.Moved, atPause, wired, time.Since(started).Round(time.Second))
	if o.lost != 0 || o.leftInSource != 0 || o.duplicates != 0 || sum.Moved != int64(n) {
		t.Errorf("after the pause: moved %d, lost %d, %d left in the source, %d duplicates", sum.Moved, o.lost, o.leftInSource, o.duplicates)
	}
	if atPause >= n {
		t.Errorf("every message had moved before the pause showed: the alarm came too late to test anything")
	}
}

// ---------------------------------------------------------------------------
// 5. Several processes at once

// concurrentRun starts procs redrives of the same n messages at once and
// checks that, competing for them with no failure, they move each message
// exactly once between them.
func concurrentRun(t *testing.T, b FaultHarness, n, nprocs int) {
	started := time.Now()
	src, dst := b.Queue(t, "src"), b.Queue(t, "dst")
	want := ids("c", n)
	b.Fill(t, src, want)
	procs := make([]*proc, nprocs)
	for i := range procs {
		procs[i] = startDLQ(t, t.TempDir(), redriveArgs(b, src, dst)...)
	}
	var moved []int64
	for i, p := range procs {
		if code := p.wait(t, 3*time.Minute); code != exitOK {
			t.Errorf("process %d: exit %d\n%s", i, code, p.errOut.String())
			continue
		}
		moved = append(moved, p.summary(t).Moved)
	}
	concurrentCheck(t, b, src, dst, want, nprocs, moved, started)
}

// concurrentCheck accounts for the messages of a concurrent run, whose
// processes that exited 0 reported moved, logs the tally, and fails t for
// a loss, a message left behind or a duplicate.
func concurrentCheck(t testing.TB, b FaultHarness, src, dst string, want []string, nprocs int, moved []int64, started time.Time) {
	t.Helper()
	n := len(want)
	var each []string
	var total int64
	for _, m := range moved {
		each = append(each, strconv.FormatInt(m, 10))
		total += m
	}
	o := account(t, b, src, dst, want)
	wired := b.Wire().Check(t)
	t.Logf("fault tally: scenario=concurrent-processes %s backend=%s messages=%d processes=%d moved_each=%s lost=%d duplicates=%d left=%d removals_checked_on_wire=%d took=%s",
		b.Server(), b.Name(), n, nprocs, strings.Join(each, "+"), o.lost, o.duplicates, o.leftInSource, wired, time.Since(started).Round(time.Second))
	if o.lost != 0 || o.leftInSource != 0 {
		t.Errorf("lost %d, %d left in the source", o.lost, o.leftInSource)
	}
	// Competing consumers with no failure: each message is taken by
	// one process and acknowledged once, so nothing moves twice.
	if o.duplicates != 0 || total != int64(n) {
		t.Errorf("%d duplicates; the processes reported %d moved in all, want %d", o.duplicates, total, n)
	}
}
