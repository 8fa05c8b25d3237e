package brokertest

// The fault scenarios: the built dlq binary redrives real queues while the
// suite kills it (SIGKILL at random moments), closes its connections,
// restarts or stops the server under it, blocks its publishers, or loses a
// cluster node. Afterwards every message must be in the source or the
// destination (counted by unique ID, out of band), duplicates must stay
// within the messages in flight, a re-run (or --resume) must finish the
// move, and the wire must show no removal from the source before the
// destination confirmed the message. Each scenario logs one "fault tally:"
// line that `make test` collects.
//
// The random kill moments come from a seed printed in the log;
// DLQ_FAULT_SEED=N repeats a run.

import (
	"runtime"
	"testing"
	"time"
)

// The redrive shape of the fault scenarios: the in-flight bound of `dlq help
// redrive-safety` is window × (concurrency + 1).
const (
	FaultWindow      = 100
	FaultConcurrency = 2
	// FaultInFlight is the most messages dlq has in flight at once with
	// FaultWindow and FaultConcurrency.
	FaultInFlight = FaultWindow * (FaultConcurrency + 1)
)

// FaultHarness connects the fault scenarios to one adapter's server: it
// makes queues, fills them with messages whose body is a unique ID, and
// counts and drains them with the server's own client, never through dlq's
// adapter, so that a bug in the adapter cannot hide a loss. It also tells
// dlq how to reach the server, through a proxy that records the wire.
//
// What else a harness can do to its server is a capability of its own
// (Restarter, Stopper, ConnectionCloser, Blocker, NodeKiller,
// LeaderStopper); Faults runs the scenario of each capability the harness
// has and skips the others with the reason.
type FaultHarness interface {
	// Name is the backend label of the tally ("rabbitmq-classic", "sqs").
	Name() string
	// Server names the server and its version for the tally
	// ("rabbitmq=4.0.5", "sqs=fauxqs").
	Server() string
	// Args are dlq's broker flags ("--broker", URL, …), pointing dlq at
	// the proxy that records into Wire.
	Args() []string
	// Queue makes a queue for the test, named after prefix
	// (Name), and deletes it when the test ends.
	Queue(t testing.TB, prefix string) string
	// Fill puts one message per ID into q, the ID as its body, and
	// returns once the server confirmed them all.
	Fill(t testing.TB, q string, ids []string)
	// Count is how many messages q holds: ready ones, and those a
	// consumer holds if the server counts them (Settled tells the suite
	// when a killed consumer's messages are back).
	Count(t testing.TB, q string) int
	// Settled reports whether no consumer holds messages of q any more
	// (a killed consumer's messages are back); true where the server
	// counts held messages anyway.
	Settled(t testing.TB, q string) bool
	// Prefetch is the most deliveries dlq holds unacknowledged at once
	// with --window FaultWindow --concurrency FaultConcurrency: after a
	// kill, at most these can be at the destination and back in the
	// source.
	Prefetch() int
	// Drain removes every message of q, waiting for held ones to come
	// back, and returns how often each ID was seen.
	Drain(t testing.TB, q string) map[string]int
	// Wire is the ledger of the proxy between dlq and the server.
	Wire() *WireLedger
}

// Restarter is a harness that can restart its server while dlq redrives.
// Durable queues and persistent messages must survive it.
type Restarter interface {
	FaultHarness
	// Restart restarts the server and returns once it answers again.
	Restart(t testing.TB)
}

// Stopper is a harness that can stop its server for longer than dlq waits
// for it, and start it again: dlq gives up, and a --resume run finishes the
// move.
type Stopper interface {
	FaultHarness
	// Stop stops the server; Start starts it and returns once it answers.
	Stop(t testing.TB)
	Start(t testing.TB)
}

// ConnectionCloser is a harness that can have the server close every
// client connection (RabbitMQ: rabbitmqctl close_all_connections).
type ConnectionCloser interface {
	FaultHarness
	CloseConnections(t testing.TB)
}

// Blocker is a harness that can have the server block dlq's publishers
// (RabbitMQ: a memory alarm, connection.blocked), which dlq must wait out.
type Blocker interface {
	FaultHarness
	// Block raises the block; unblock lifts it.
	Block(t testing.TB) (unblock func())
}

// NodeKiller is a harness on a cluster that can kill (SIGKILL) the node
// dlq is connected to.
type NodeKiller interface {
	FaultHarness
	// KillConnectedNode kills the node dlq's connections go to, and starts
	// it again when the test ends.
	KillConnectedNode(t testing.TB)
}

// LeaderStopper is a harness on a cluster that can stop the node that leads
// a replicated queue.
type LeaderStopper interface {
	FaultHarness
	// Leader finds the node that leads queue now, before dlq starts, and
	// returns a function that stops that node cleanly (and starts it
	// again when the test ends).
	Leader(t testing.TB, queue string) (stop func(t testing.TB))
}

// HeldCounter is a harness that can count the messages of a queue that are
// delivered and not yet acknowledged, as the server counts them. A re-run
// that reports messages still held waits for it to reach 0; without it,
// for Settled.
type HeldCounter interface {
	Held(t testing.TB, q string) int
}

// TallyNamer is a harness that names a scenario its own way in the tally
// ("restart" as "node-restart"); without it the tally uses the scenario's
// name.
type TallyNamer interface {
	TallyName(scenario string) string
}

// FaultOptions sizes the scenarios for a harness's server. The zero value
// suits a local RabbitMQ.
type FaultOptions struct {
	// KillMessages is how many messages each kill trial redrives; 0 means
	// 2000.
	KillMessages int
	// Messages is how many messages a disruption and a Concurrency run
	// redrive; 0 means 3000.
	Messages int
	// Rate caps dlq's redrive in a disruption (--rate, messages per
	// second), so that the fault strikes mid-run; "" means "1000".
	Rate string
	// Processes is how many dlq processes Concurrency starts at once; 0
	// means 3.
	Processes int
	// Skip names scenarios not to run on this harness, each with why
	// ("sigkill": "the kill trials run on the single-node servers").
	Skip map[string]string
}

func (o FaultOptions) withDefaults() FaultOptions {
	if o.KillMessages == 0 {
		o.KillMessages = 2000
	}
	if o.Messages == 0 {
		o.Messages = 3000
	}
	if o.Rate == "" {
		o.Rate = "1000"
	}
	if o.Processes == 0 {
		o.Processes = 3
	}
	return o
}

// Faults runs on a server that it may disturb every fault scenario that the
// harness's capabilities allow, one after the other (a restart would
// disturb the others), each as a subtest with a harness of its own from
// newHarness (a fresh proxy and ledger):
//
//   - sigkill: ten or more SIGKILLs of dlq at random moments, each followed
//     by --resume (or a plain re-run when the kill came before the journal);
//   - close-all-connections (ConnectionCloser), restart (Restarter),
//     stop-start (Stopper), kill-connected-node (NodeKiller), stop-leader
//     (LeaderStopper): the fault strikes while dlq is frozen a fifth of the
//     way through; dlq must ride it out or exit 3 (partly done), and a
//     re-run finishes the move;
//   - connection-blocked (Blocker): the server blocks dlq's publishers a
//     tenth of the way through; dlq must say it paused, move nothing
//     meanwhile, and finish once the block lifts.
//
// A scenario whose capability the harness lacks is skipped with the reason,
// as is one named in o.Skip.
//
//	func TestFaultMyBroker(t *testing.T) {
//		env := … // servers this test may restart
//		brokertest.Faults(t, func(t testing.TB) brokertest.FaultHarness { return newHarness(t, env) }, brokertest.FaultOptions{})
//	}
func Faults(t *testing.T, newHarness func(t testing.TB) FaultHarness, o FaultOptions) {
	t.Helper()
	o = o.withDefaults()
	run := func(name, capability string, f func(t *testing.T, h FaultHarness)) {
		t.Run(name, func(t *testing.T) {
			if why, ok := o.Skip[name]; ok {
				t.Skip(why)
			}
			if capability != "" && !canFreeze {
				t.Skipf("%s freezes dlq (SIGSTOP) to put the fault in place mid-run, which %s cannot", name, runtime.GOOS)
			}
			h := newHarness(t)
			if !has(h, capability) {
				t.Skipf("the %s harness is not a brokertest.%s", h.Name(), capability)
			}
			f(t, h)
		})
	}
	run("sigkill", "", func(t *testing.T, h FaultHarness) { killTrials(t, h, o.KillMessages) })
	run("close-all-connections", "ConnectionCloser", func(t *testing.T, h FaultHarness) {
		disruptRun(t, h, o.Messages, o.Rate, disruption{
			name:   tallyName(h, "close-all-connections"),
			inject: func(t *testing.T, _ *proc) { h.(ConnectionCloser).CloseConnections(t) },
		})
	})
	run("connection-blocked", "Blocker", func(t *testing.T, h FaultHarness) {
		blockedRun(t, h.(Blocker), o.Messages, o.Rate)
	})
	run("restart", "Restarter", func(t *testing.T, h FaultHarness) {
		disruptRun(t, h, o.Messages, o.Rate, disruption{
			name:   tallyName(h, "restart"),
			inject: func(t *testing.T, _ *proc) { h.(Restarter).Restart(t) },
			rerun:  []string{"--resume"},
		})
	})
	run("stop-start", "Stopper", func(t *testing.T, h FaultHarness) {
		s := h.(Stopper)
		// The server stays down until dlq gave up; what dlq had taken
		// stays held, and --resume waits for it.
		disruptRun(t, h, o.Messages, o.Rate, disruption{
			name: tallyName(h, "stop-start"),
			inject: func(t *testing.T, p *proc) {
				t.Cleanup(func() { s.Start(t) })
				s.Stop(t)
				p.cont()
				select {
				case <-p.done:
				case <-time.After(2 * time.Minute):
					t.Errorf("dlq still runs two minutes after the server stopped")
				}
				s.Start(t)
			},
			rerun: []string{"--resume"},
		})
	})
	run("kill-connected-node", "NodeKiller", func(t *testing.T, h FaultHarness) {
		disruptRun(t, h, o.Messages, o.Rate, disruption{
			name:   tallyName(h, "kill-connected-node"),
			inject: func(t *testing.T, _ *proc) { h.(NodeKiller).KillConnectedNode(t) },
			rerun:  []string{"--resume"},
		})
	})
	run("stop-leader", "LeaderStopper", func(t *testing.T, h FaultHarness) {
		var stop func(testing.TB)
		disruptRun(t, h, o.Messages, o.Rate, disruption{
			name:   tallyName(h, "stop-leader"),
			before: func(t *testing.T, src string) { stop = h.(LeaderStopper).Leader(t, src) },
			inject: func(t *testing.T, _ *proc) { stop(t) },
			rerun:  []string{"--resume"},
		})
	})
}

// Concurrency starts o.Processes redrives of the same o.Messages messages at
// once, on a harness from newHarness, and checks that they move each
// message exactly once between them. It disturbs no server, so it may run
// on shared ones.
func Concurrency(t *testing.T, newHarness func(t testing.TB) FaultHarness, o FaultOptions) {
	t.Helper()
	o = o.withDefaults()
	concurrentRun(t, newHarness(t), o.Messages, o.Processes)
}

// has reports whether h implements the capability interface named.
func has(h FaultHarness, capability string) bool {
	var ok bool
	switch capability {
	case "":
		ok = true
	case "Restarter":
		_, ok = h.(Restarter)
	case "Stopper":
		_, ok = h.(Stopper)
	case "ConnectionCloser":
		_, ok = h.(ConnectionCloser)
	case "Blocker":
		_, ok = h.(Blocker)
	case "NodeKiller":
		_, ok = h.(NodeKiller)
	case "LeaderStopper":
		_, ok = h.(LeaderStopper)
	}
	return ok
}

func tallyName(h FaultHarness, scenario string) string {
	if n, ok := h.(TallyNamer); ok {
		return n.TallyName(scenario)
	}
	return scenario
}
