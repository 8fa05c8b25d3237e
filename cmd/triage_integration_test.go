package cmd

// End-to-end test of `dlq triage` and `dlq triage apply` on RabbitMQ with
// dead letters from consumers written as real services write them: an
// amqp091 consumer per work queue that, when its handler fails, republishes
// the message to the DLQ with Spring's failure headers (as Spring's
// RepublishMessageRecoverer does: x-exception-*, x-original-routingKey, the
// message's own headers kept, stamped with the time of the failure) and
// acknowledges it.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"gopkg.in/yaml.v3"

	"github.com/dlq-tools/dlq/broker/brokertest"
	"github.com/dlq-tools/dlq/inspect"
)

// springService consumes a work queue: handle reports whether the message
// is processed; when it is not, the message goes to dlq with reason.
type springService struct {
	handled, failed atomic.Int64
	handle          atomic.Value // func(amqp.Delivery) bool
}

func runSpringService(t *testing.T, r *riRabbit, work, dlq, reason string, handle func(amqp.Delivery) bool) *springService {
	t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ds, err := ch.Consume(work, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &springService{}
	s.handle.Store(handle)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for d := range ds {
			if s.handle.Load().(func(amqp.Delivery) bool)(d) {
				s.handled.Add(1)
				_ = d.Ack(false)
				continue
			}
			h := amqp.Table{}
			for k, v := range d.Headers {
				h[k] = v
			}
			typ, msg, _ := strings.Cut(reason, ": ")
			h["x-exception-message"] = msg
			h["x-exception-stacktrace"] = reason + "\n\tat com.shop.Handler.handle(Handler.java:42)\n"
			h["x-original-exchange"] = ""
			h["x-original-routingKey"] = work
			_ = typ
			conf, err := ch.PublishWithDeferredConfirm("", dlq, false, false, amqp.Publishing{Headers: h, Body: d.Body, ContentType: d.ContentType, MessageId: d.MessageId, DeliveryMode: amqp.Persistent, Timestamp: time.Now()})
			if err != nil || !conf.Wait() {
				_ = d.Nack(false, true)
				continue
			}
			s.failed.Add(1)
			_ = d.Ack(false)
		}
	}()
	t.Cleanup(func() { ch.Close(); wg.Wait() })
	return s
}

func never(amqp.Delivery) bool  { return false }
func always(amqp.Delivery) bool { return true }

// applyOut is the part of `triage apply -o json` the test checks.
type applyOut struct {
	Steps []struct {
		ID      string          `json:"id"`
		Action  string          `json:"action"`
		Outcome string          `json:"outcome"`
		Result  json.RawMessage `json:"result"`
	} `json:"groups"`
	Outcome string `json:"outcome"`
}

func TestTriageIntegrationRabbit(t *testing.T) {
	r := newRIRabbit(t)
	base := brokertest.Name(t, "triage")
	dlq := r.queue(base+".dlq", nil)
	type group struct {
		name, reason string
		n            int
		svc          *springService
		work         string
	}
	groups := []*group{
		{name: "pricing", reason: "java.net.SocketTimeoutException: Read timed out calling http://pricing.internal/quote", n: 20},
		{name: "signup", reason: "com.shop.MissingFieldException: missing field `customer_id`", n: 15},
		{name: "ledger", reason: "org.springframework.dao.DuplicateKeyException: duplicate key value violates unique constraint orders_pkey", n: 10},
		{name: "payments", reason: "org.springframework.web.client.HttpServerErrorException: 503 Service Unavailable from payments", n: 8},
		{name: "events", reason: "com.shop.UnknownEventException: Unknown event type OrderArchived", n: 4},
	}
	for _, g := range groups {
		g.work = r.queue(base+"."+g.name, nil)
		g.svc = runSpringService(t, r, g.work, dlq, g.reason, never)
		var ps []amqp.Publishing
		for i := 0; i < g.n; i++ {
			ps = append(ps, amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", MessageId: g.name + strconv.Itoa(i), Body: []byte(`{"n":` + strconv.Itoa(i) + `}`)})
		}
		r.publish("", g.work, ps...)
	}
	total := 0
	for _, g := range groups {
		total += g.n
	}
	r.waitDepth(dlq, total)
	settled := time.Now()

	// A dependency still down: the inventory service keeps failing new
	// orders while triage runs.
	inv := r.queue(base+".inventory", nil)
	runSpringService(t, r, inv, dlq, "java.net.ConnectException: Connection refused: inventory:8080", never)
	stop := make(chan struct{})
	var producer sync.WaitGroup
	producer.Add(1)
	go func() {
		defer producer.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			_ = r.ch.Publish("", inv, false, false, amqp.Publishing{Body: []byte(`{"inv":` + strconv.Itoa(i) + `}`)})
		}
	}()
	defer func() { close(stop); producer.Wait() }()
	riPoll(t, 30*time.Second, "the inventory failures to arrive", func() bool { return r.depth(dlq) > total })

	// The first five groups stopped arriving --quiet ago.
	const quiet = 8 * time.Second
	time.Sleep(time.Until(settled.Add(quiet + time.Second)))
	dir := t.TempDir()
	stdout, stderr, code := runDLQ(t, append(slices.Clone(r.args), "triage", dlq, "--quiet", quiet.String(), "-o", "yaml")...)
	if code != ExitOK {
		t.Fatalf("triage: exit %d: %s", code, stderr)
	}
	var plan inspect.TriagePlan
	if err := yaml.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatal(err)
	}
	byName := map[string]*inspect.PlanGroup{}
	for i := range plan.Groups {
		g := &plan.Groups[i]
		for _, want := range groups {
			if strings.Contains(want.reason, strings.SplitN(g.Template, "<", 2)[0]) || strings.HasPrefix(want.reason, strings.SplitN(g.Template, "<", 2)[0]) {
				byName[want.name] = g
			}
		}
		if strings.Contains(g.Template, "Connection refused") {
			byName["inventory"] = g
		}
	}
	wantActions := map[string]string{"pricing": "redrive", "signup": "fix", "ledger": "park", "payments": "redrive", "events": "park", "inventory": "wait"}
	for name, want := range wantActions {
		g := byName[name]
		if g == nil {
			t.Fatalf("no group for %s in the plan:\n%s", name, stdout)
		}
		if g.Action != want {
			t.Errorf("%s: action %s (%s); want %s", name, g.Action, g.Why, want)
		}
		if name != "inventory" && (len(g.Evidence.Destinations) != 1 || g.Evidence.Destinations[0].Value != base+"."+name || g.Evidence.Frameworks[0].Value != "spring") {
			t.Errorf("%s: destinations %v, frameworks %v; want its work queue, spring", name, g.Evidence.Destinations, g.Evidence.Frameworks)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if g := byName["signup"]; g.Transform != `.body.customer_id = "FILL-ME"` {
		t.Fatalf("signup transform %q", g.Transform)
	}

	// The fixes: pricing's dependency is back; signup accepts orders with
	// a customer; payments stays broken.
	groups[0].svc.handle.Store(always)
	groups[1].svc.handle.Store(func(d amqp.Delivery) bool { return strings.Contains(string(d.Body), `"customer_id"`) })
	// The user completes the transform.
	edited := strings.Replace(stdout, `"FILL-ME"`, `"cus_0"`, 1)
	path := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "audit.jsonl")
	stdout, stderr, code = runDLQWith(t, runOpts{Timeout: 5 * time.Minute}, append(slices.Clone(r.args), "triage", "apply", path, "--yes", "--canary-wait", "4s",
		"--archive-dir", dir, "--audit-log", audit, "-o", "json")...)
	if code != ExitCanaryStopped {
		t.Fatalf("apply: exit %d, want %d (the payments canary stops)\nstdout: %s\nstderr: %s", code, ExitCanaryStopped, stdout, stderr)
	}
	t.Logf("triage apply:\n%s", stderr)
	var out applyOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("apply -o json: %v\n%s", err, stdout)
	}
	outcome := map[string]string{}
	var paymentsResult json.RawMessage
	for _, s := range out.Steps {
		for name, g := range byName {
			if g.ID == s.ID {
				outcome[name] = s.Outcome
				if name == "payments" {
					paymentsResult = s.Result
				}
			}
		}
	}
	wantOutcome := map[string]string{"pricing": "done", "signup": "done", "ledger": "done", "payments": "canary-stopped", "events": "not-run", "inventory": "nothing-to-do"}
	for name, want := range wantOutcome {
		if outcome[name] != want {
			t.Errorf("%s: outcome %q, want %q", name, outcome[name], want)
		}
	}
	var c canaryOut
	if err := json.Unmarshal(paymentsResult, &c); err != nil {
		t.Fatalf("payments result: %v: %s", err, paymentsResult)
	}
	checkStopped(t, c, 1)
	// Nothing beyond the first step moved: the payments service saw its
	// 8 failures and the 1 canary message, nothing more.
	if n := groups[3].svc.failed.Load() + groups[3].svc.handled.Load(); n != 9 {
		t.Errorf("payments service got %d messages, want 8 + the canary's 1", n)
	}
	riPoll(t, 30*time.Second, "pricing handled 20", func() bool { return groups[0].svc.handled.Load() == 20 })
	riPoll(t, 30*time.Second, "signup handled 15", func() bool { return groups[1].svc.handled.Load() == 15 })
	if n := groups[4].svc.failed.Load() + groups[4].svc.handled.Load(); n != 4 {
		t.Errorf("events service got %d messages, want its 4 failures only (the group after the stop is untouched)", n)
	}
	// The ledger group is in its archive, and out of the DLQ.
	archives, _ := filepath.Glob(filepath.Join(dir, "parked-*"+byName["ledger"].ID+"*.jsonl.gz"))
	if len(archives) != 1 {
		t.Fatalf("ledger archives %v, want one", archives)
	}
	if n := countArchived(t, archives[0]); n != 10 {
		t.Errorf("ledger archive holds %d messages, want 10", n)
	}
	// One audit record per group acted on: pricing, signup, ledger, payments.
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		actions = append(actions, rec.Action+":"+strings.Join(rec.Groups, ",")+":"+rec.Outcome)
	}
	wantAudit := []string{
		"redrive:" + byName["pricing"].ID + ":ok",
		"redrive:" + byName["signup"].ID + ":ok",
		"discard:" + byName["ledger"].ID + ":ok",
		"redrive:" + byName["payments"].ID + ":canary-stopped",
	}
	if strings.Join(actions, "\n") != strings.Join(wantAudit, "\n") {
		t.Errorf("audit records:\n%s\nwant:\n%s", strings.Join(actions, "\n"), strings.Join(wantAudit, "\n"))
	}

	// The plan is now stale (the groups it acted on vanished or shrank):
	// apply refuses it and shows the difference.
	_, stderr, code = runDLQ(t, append(slices.Clone(r.args), "triage", "apply", path, "--yes")...)
	if code != ExitError || !strings.Contains(stderr, "vanished") || !strings.Contains(stderr, "pass `--refresh`") {
		t.Errorf("stale plan: exit %d, stderr %q; want 1 with the difference", code, stderr)
	}

	// Payments is fixed: --refresh applies the plan's choices to the
	// groups as they are now, and everything left to act on goes.
	groups[3].svc.handle.Store(always)
	stdout, stderr, code = runDLQWith(t, runOpts{Timeout: 5 * time.Minute}, append(slices.Clone(r.args), "triage", "apply", path, "--yes", "--refresh", "--canary-wait", "4s",
		"--archive-dir", dir, "--audit-log", audit, "-o", "json")...)
	if code != ExitOK {
		t.Fatalf("apply --refresh: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	out = applyOut{}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("apply --refresh -o json: %v\n%s", err, stdout)
	}
	var done []string
	for _, s := range out.Steps {
		if s.Outcome == "done" {
			done = append(done, s.ID)
		}
	}
	slices.Sort(done)
	wantDone := []string{byName["payments"].ID, byName["events"].ID}
	slices.Sort(wantDone)
	if !slices.Equal(done, wantDone) {
		t.Errorf("refreshed apply did %v, want payments and events %v", done, wantDone)
	}
	riPoll(t, 30*time.Second, "payments handled 8", func() bool { return groups[3].svc.handled.Load() == 8 })
}

// countArchived is the number of messages `dlq stats` reads in an archive.
func countArchived(t *testing.T, path string) int64 {
	t.Helper()
	stdout, stderr, code := runDLQ(t, "stats", "file://"+path, "-o", "json")
	if code != ExitOK {
		t.Fatalf("stats of %s: exit %d: %s", path, code, stderr)
	}
	var res inspect.StatsResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	return res.Total
}
