package broker

import (
	"fmt"
	"testing"
	"time"
)

func TestRoleFromQueueName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Role // "" for no convention
	}{
		// The conventions.
		{"orders.dlq", RoleDLQ},
		{"orders-dlq", RoleDLQ},
		{"orders_DLQ.fifo", RoleDLQ},
		{"OrdersDLQ", RoleDLQ},
		{"dlq-orders", RoleDLQ},
		{"DLQOrders", RoleDLQ},
		{"orders.dead", RoleDLQ},
		{"orders.dead.q", RoleDLQ}, // dlq topology's ladder parking lot
		{"orders-dead-letter", RoleDLQ},
		{"orders.dead_letters", RoleDLQ},
		{"ordersDeadLetterQueue", RoleDLQ},
		{"dead-letter.orders", RoleDLQ},
		{"deadletters", RoleDLQ},
		{"submit-order_error", RoleDLQ}, // MassTransit
		{"orders.error", RoleDLQ},
		{"error", RoleDLQ}, // NServiceBus's default error queue
		{"orders.errors", RoleDLQ},
		{"orders.poison", RoleDLQ},
		{"orders.dlx", RoleDLQ},
		{"orders-dl", RoleDLQ},
		{"orders.dlq.queue", RoleDLQ},
		{"orders.parking", RoleParking},
		{"orders.parking-lot", RoleParking},
		{"orders_parkinglot", RoleParking},
		{"orders.graveyard", RoleParking},
		{"graveyard", RoleParking},
		{"payments.parking.q", RoleParking},
		// False positives the word rule keeps out.
		{"terror-events", ""},
		{"error-events", ""},
		{"errorhandler", ""},
		{"orders.errorlog", ""},
		{"dlqtool-state", ""},
		{"dead-reckoning", ""},
		{"deadline-watch", ""},
		{"parking-payments", ""},
		{"carparking", ""},
		{"graveyards-shift", ""},
		{"orders", ""},
		{"orders.retry", ""},
		{"payment.failed", ""}, // an event name, not a convention
		{"q", ""},
		{"", ""},
	} {
		got, ok := RoleFromQueueName(tc.name)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("RoleFromQueueName(%q) = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

// roleOf is the role and its source, for a compact comparison.
func roleOf(q Queue) string { return fmt.Sprintf("%s/%s dlq=%v", q.Role, q.RoleSource, q.IsDLQ) }

func checkRoles(t *testing.T, qs []Queue, want map[string]string) {
	t.Helper()
	for _, q := range qs {
		w, ok := want[q.Name]
		if !ok {
			t.Fatalf("no expectation for %s", q.Name)
		}
		if got := roleOf(q); got != w {
			t.Errorf("%s: got %s, want %s", q.Name, got, w)
		}
	}
}

func TestAssignRolesRabbitLadder(t *testing.T) {
	// orders dead-letters into orders.retry (TTL 30s), which dead-letters
	// back; the application publishes to orders.dead.q itself.
	qs := []Queue{
		{Name: "orders", DeadLetterTarget: "orders.retry.x", DeadLetterQueues: []string{"orders.retry"}, DeadLetterSources: []string{"orders.retry"}},
		{Name: "orders.retry", MessageTTL: 30 * time.Second, DeadLetterTarget: "orders.x", DeadLetterQueues: []string{"orders"}, DeadLetterSources: []string{"orders"}},
		{Name: "orders.dead.q"},
		// Two tiers: the second tier is only published to.
		{Name: "pay", DeadLetterQueues: []string{"pay.retry.1s"}, DeadLetterSources: []string{"pay.retry.1s", "pay.retry.1m"}},
		{Name: "pay.retry.1s", MessageTTL: time.Second, DeadLetterQueues: []string{"pay"}, DeadLetterSources: []string{"pay"}},
		{Name: "pay.retry.1m", MessageTTL: time.Minute, DeadLetterQueues: []string{"pay"}},
		{Name: "pay_error"},
		// A work queue whose messages expire into its DLQ, which expires
		// into a parking lot: neither TTL queue is a retry.
		{Name: "mail", MessageTTL: time.Hour, DeadLetterQueues: []string{"mail.dlq"}},
		{Name: "mail.dlq", MessageTTL: 7 * 24 * time.Hour, DeadLetterQueues: []string{"mail.archive"}, DeadLetterSources: []string{"mail"}},
		{Name: "mail.archive", DeadLetterSources: []string{"mail.dlq"}},
		// Per-message TTLs: only the name tells the retry queue.
		{Name: "ship", DeadLetterQueues: []string{"ship.wait"}, DeadLetterSources: []string{"ship.wait"}},
		{Name: "ship.wait", DeadLetterQueues: []string{"ship"}, DeadLetterSources: []string{"ship"}},
		// Plain queues.
		{Name: "terror-events"},
		{Name: "audit", DeadLetterQueues: []string{"audit.parking"}},
		{Name: "audit.parking", DeadLetterSources: []string{"audit"}},
	}
	AssignRoles(qs, nil)
	checkRoles(t, qs, map[string]string{
		"orders":        "work/topology dlq=false",
		"orders.retry":  "retry/topology dlq=false",
		"orders.dead.q": "dlq/name dlq=true",
		"pay":           "work/topology dlq=false",
		"pay.retry.1s":  "retry/topology dlq=false",
		"pay.retry.1m":  "retry/topology dlq=false",
		"pay_error":     "dlq/name dlq=true",
		"mail":          "work/topology dlq=false",
		"mail.dlq":      "dlq/topology dlq=true",
		"mail.archive":  "parking/topology dlq=true",
		"ship":          "work/topology dlq=false",
		"ship.wait":     "retry/name dlq=false",
		"terror-events": "work/default dlq=false",
		"audit":         "work/topology dlq=false",
		"audit.parking": "parking/topology dlq=true",
	})
}

func TestAssignRolesRetryByName(t *testing.T) {
	qs := []Queue{
		// A per-message TTL ladder whose retry queue has a queue TTL of
		// its own but returns to a work queue without a DLX.
		{Name: "jobs", DeadLetterSources: []string{"jobs.retry"}},
		{Name: "jobs.retry", MessageTTL: 5 * time.Second, DeadLetterQueues: []string{"jobs"}},
		// A TTL into a DLQ-named queue is expiry, whatever the name.
		{Name: "tasks.delay", MessageTTL: time.Minute, DeadLetterQueues: []string{"tasks.dlq"}},
		{Name: "tasks.dlq", DeadLetterSources: []string{"tasks.delay"}},
		// A loop without TTLs or retry names is dead-lettering both ways.
		{Name: "left", DeadLetterQueues: []string{"right"}, DeadLetterSources: []string{"right"}},
		{Name: "right", DeadLetterQueues: []string{"left"}, DeadLetterSources: []string{"left"}},
	}
	AssignRoles(qs, nil)
	checkRoles(t, qs, map[string]string{
		"jobs":        "work/topology dlq=false",
		"jobs.retry":  "retry/name dlq=false",
		"tasks.delay": "work/topology dlq=false",
		"tasks.dlq":   "dlq/topology dlq=true",
		"left":        "parking/topology dlq=true",
		"right":       "parking/topology dlq=true",
	})
}

func TestAssignRolesSQS(t *testing.T) {
	// dlq topology's SQS ladder: main and delay tiers all redrive into
	// the DLQ; the tiers are delay queues.
	qs := []Queue{
		{Name: "orders.fifo", DeadLetterTarget: "orders-dlq.fifo", DeadLetterQueues: []string{"orders-dlq.fifo"}},
		{Name: "orders-retry-30s.fifo", DeliveryDelay: 30 * time.Second, DeadLetterTarget: "orders-dlq.fifo", DeadLetterQueues: []string{"orders-dlq.fifo"}},
		{Name: "orders-dlq.fifo", DeadLetterSources: []string{"orders-retry-30s.fifo", "orders.fifo"}},
		{Name: "reports", DeliveryDelay: time.Minute}, // a delayed work queue
		{Name: "allowed"},
		{Name: "denied-dlq"},
		{Name: "single", DeadLetterSources: []string{"somewhere-else"}},
	}
	hints := []DLQHint{HintNone, HintNone, HintNone, HintNone, HintDLQ, HintNotDLQ, HintNone}
	AssignRoles(qs, hints)
	checkRoles(t, qs, map[string]string{
		"orders.fifo":           "work/topology dlq=false",
		"orders-retry-30s.fifo": "retry/name dlq=false",
		"orders-dlq.fifo":       "dlq/topology dlq=true",
		"reports":               "work/default dlq=false",
		"allowed":               "dlq/topology dlq=true",
		"denied-dlq":            "work/topology dlq=false",
		"single":                "dlq/topology dlq=true",
	})
}

// BenchmarkAssignRoles: a vhost of 10,000 queues, 2,500 ladders of a work
// queue, a TTL retry queue, a DLQ and a parking queue.
func BenchmarkAssignRoles(b *testing.B) {
	var qs []Queue
	for i := 0; i < 2500; i++ {
		w, r, d, p := fmt.Sprint("app", i), fmt.Sprint("app", i, ".retry"), fmt.Sprint("app", i, ".held"), fmt.Sprint("app", i, ".parking")
		qs = append(qs,
			Queue{Name: w, DeadLetterQueues: []string{r}, DeadLetterSources: []string{r}},
			Queue{Name: r, MessageTTL: time.Second, DeadLetterQueues: []string{w}, DeadLetterSources: []string{w}},
			Queue{Name: d, DeadLetterQueues: []string{p}},
			Queue{Name: p, DeadLetterSources: []string{d}})
	}
	b.ReportAllocs()
	for b.Loop() {
		AssignRoles(qs, nil)
	}
}
