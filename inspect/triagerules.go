package inspect

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dlq-tools/dlq/internal/human"
)

// Failure kinds a triage rule assigns.
const (
	KindTransient = "transient" // the cause goes away by itself: retry later
	KindPermanent = "permanent" // the message will fail every time
	KindFixable   = "fixable"   // a transform of the message can mend it
)

// Actions a triage plan suggests for a group.
const (
	ActionRedrive = "redrive" // redrive to the origin with a canary
	ActionWait    = "wait"    // do nothing yet: the failure is still arriving
	ActionFix     = "fix"     // complete the transform, then redrive with a canary
	ActionPark    = "park"    // archive-first discard, or a move to a parking queue
	ActionLook    = "look"    // no rule places it: a person looks
	ActionSkip    = "skip"    // the user's choice: leave the group alone
)

// TriageActions lists the actions a plan may hold.
var TriageActions = []string{ActionRedrive, ActionWait, ActionFix, ActionPark, ActionLook, ActionSkip}

// TransformTodo marks what a transform skeleton leaves to complete; a plan
// whose transform still holds it is not applied.
const TransformTodo = "FILL-ME"

// RedriveLoopLimit is how many earlier redrives make a transient group a
// case to look at: it came back each time.
const RedriveLoopLimit = 3

// TriageRule places failures in a kind. A rule matches a group when each
// pattern it has matches: Reason (a regular expression, case-insensitive
// unless it says otherwise) over the group's reason (an example's full
// text, or the template), Type over its exception types, Framework equal
// to one of its frameworks. A fixable rule's Transform is the jq skeleton
// of the fix, where {field} is the Reason's (?P<field>…) capture.
type TriageRule struct {
	Name      string `json:"name" yaml:"name"`
	Kind      string `json:"kind" yaml:"kind"`
	Reason    string `json:"reason,omitempty" yaml:"reason,omitempty"`
	Type      string `json:"type,omitempty" yaml:"type,omitempty"`
	Framework string `json:"framework,omitempty" yaml:"framework,omitempty"`
	Transform string `json:"transform,omitempty" yaml:"transform,omitempty"`
	Why       string `json:"why,omitempty" yaml:"why,omitempty"`
	// Origin is where the rule comes from: builtin, or the rules file.
	Origin string `json:"origin" yaml:"-"`

	reason, typ *regexp.Regexp
}

// Compile checks r and prepares its patterns.
func (r *TriageRule) Compile() error {
	if strings.TrimSpace(r.Name) == "" {
		return errors.New("a rule needs a name")
	}
	switch r.Kind {
	case KindTransient, KindPermanent, KindFixable:
	default:
		return fmt.Errorf("rule %q: kind %q: use transient, permanent or fixable", r.Name, r.Kind)
	}
	if r.Reason == "" && r.Type == "" {
		return fmt.Errorf("rule %q: give a reason or a type pattern", r.Name)
	}
	if r.Transform != "" && r.Kind != KindFixable {
		return fmt.Errorf("rule %q: only a fixable rule has a transform", r.Name)
	}
	var err error
	if r.Reason != "" {
		if r.reason, err = regexp.Compile("(?i)" + r.Reason); err != nil {
			return fmt.Errorf("rule %q: reason: %w", r.Name, err)
		}
	}
	if r.Type != "" {
		if r.typ, err = regexp.Compile("(?i)" + r.Type); err != nil {
			return fmt.Errorf("rule %q: type: %w", r.Name, err)
		}
	}
	if r.Transform != "" && strings.Contains(r.Transform, "{field}") && (r.reason == nil || r.reason.SubexpIndex("field") < 0) {
		return fmt.Errorf("rule %q: the transform uses {field}: capture it in the reason with (?P<field>…)", r.Name)
	}
	return nil
}

const (
	fieldName = `(?P<field>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)`
	ruleQuote = "[\"'`]?"
)

// builtinRules is the documented rule table, in the order it is tried:
// fixable first (a named field beats the general kind of the error), then
// transient (a redrive with a canary stops by itself), then permanent.
var builtinRules = []TriageRule{
	{Name: "missing-field", Kind: KindFixable, Reason: `\b(?:missing|required)(?: required)? (?:field|property|key|attribute|parameter)s?[:\s]+` + ruleQuote + fieldName,
		Transform: `.body.{field} = "` + TransformTodo + `"`, Why: "a missing field is named: set it"},
	{Name: "field-required", Kind: KindFixable, Reason: `\b(?:field|property|key|attribute) ` + ruleQuote + fieldName + ruleQuote + ` (?:is )?(?:required|missing|must not be (?:null|blank|empty)|may not be null)`,
		Transform: `.body.{field} = "` + TransformTodo + `"`, Why: "a required field is named: set it"},
	{Name: "bean-validation-null", Kind: KindFixable, Reason: `\.` + `(?P<field>[A-Za-z_][A-Za-z0-9_]*): (?:must not be (?:null|blank|empty)|may not be null)`,
		Transform: `.body.{field} = "` + TransformTodo + `"`, Why: "a validation names a missing field: set it"},
	{Name: "key-error", Kind: KindFixable, Reason: `KeyError: ["']` + fieldName + `["']`,
		Transform: `.body.{field} = "` + TransformTodo + `"`, Why: "a missing key is named: set it"},
	{Name: "field-not-number", Kind: KindFixable, Reason: `(?:cannot unmarshal \w+ into Go (?:struct )?field \w+\.` + fieldName + ` of type (?:u?int|float)|\b(?:field|property) ` + ruleQuote + fieldName + ruleQuote + ` (?:must be|should be|is not)(?: an?)? (?:number|integer|int|numeric|decimal))`,
		Transform: `.body.{field} |= tonumber`, Why: "a field is named with the wrong type: convert it to a number"},
	{Name: "field-not-string", Kind: KindFixable, Reason: `(?:cannot unmarshal \w+ into Go (?:struct )?field \w+\.` + fieldName + ` of type string|\b(?:field|property) ` + ruleQuote + fieldName + ruleQuote + ` (?:must be|should be|is not)(?: an?)? string)`,
		Transform: `.body.{field} |= tostring`, Why: "a field is named with the wrong type: convert it to a string"},

	{Name: "timeout", Kind: KindTransient, Reason: `time(?:d ?| |-)?out|deadline exceeded`, Why: "a timeout: the dependency was slow or away"},
	{Name: "timeout-type", Kind: KindTransient, Type: `timeout`, Why: "a timeout exception"},
	{Name: "connection", Kind: KindTransient, Reason: `connection (?:refused|reset|closed|aborted|lost)|ECONNREFUSED|ECONNRESET|EPIPE|broken pipe|no route to host|host (?:is )?unreachable|temporar(?:y|ily) (?:unavailable|failure)|EAI_AGAIN|name resolution`,
		Why: "a connection failure: the dependency was unreachable"},
	{Name: "connection-type", Kind: KindTransient, Type: `ConnectException|ConnectionError|SocketException|UnavailableException|TransientException|BrokenCircuit`, Why: "a connection or availability exception"},
	{Name: "server-error", Kind: KindTransient, Reason: `\b(?:HTTP|status(?: code)?)[ :=/]*5\d\d\b|\b50[0234]\b|service unavailable|bad gateway|gateway time-?out|internal server error`,
		Why: "a 5xx answer: the server failed, not the message"},
	{Name: "throttling", Kind: KindTransient, Reason: `throttl|rate.?limit|too many requests|\b429\b|SlowDown|ProvisionedThroughputExceeded|RequestLimitExceeded|quota exceeded`,
		Why: "throttled: retry at a lower rate"},
	{Name: "throttling-type", Kind: KindTransient, Type: `throttl|RateLimit|TooManyRequests`, Why: "a throttling exception"},
	{Name: "leader-election", Kind: KindTransient, Reason: `leader (?:election|not available|changed)|not (?:the )?leader|NotLeaderFor|no leader`,
		Why: "a leader election: the cluster was moving"},
	{Name: "db-retryable", Kind: KindTransient, Reason: `deadlock|lock wait timeout|could not serialize|serialization failure`,
		Why: "a retryable database conflict"},

	{Name: "constraint", Kind: KindPermanent, Reason: `constraint|duplicate key|foreign key|integrity`, Why: "a constraint violation: the same message violates it again"},
	{Name: "deserialization", Kind: KindPermanent, Reason: `deserializ|unmarshal|could not parse|cannot parse|parse error|failed to parse|malformed|unexpected (?:token|character|end of)|invalid json|not valid json|unrecognized token|syntax error`,
		Why: "the message cannot be read: it fails the same way every time"},
	{Name: "validation", Kind: KindPermanent, Reason: `validation|\binvalid\b|not a valid|is not valid|violat`, Why: "the message fails validation"},
	{Name: "unknown-type", Kind: KindPermanent, Reason: `unknown (?:message |event |command )?type|no (?:handler|consumer)s? (?:found |registered )?for|unsupported (?:message |event )?type|unrecognized (?:message |event )?type`,
		Why: "no consumer knows the message's type"},
	{Name: "permanent-type", Kind: KindPermanent, Type: `Validation|Constraint|Serializ|JsonParse|JsonMapping|MessageConversion|UnknownType|InvalidFormat`,
		Why: "an exception type that fails the same way every time"},
}

// BuiltinRules returns the built-in rule table, compiled.
func BuiltinRules() []TriageRule {
	out := make([]TriageRule, len(builtinRules))
	copy(out, builtinRules)
	for i := range out {
		out[i].Origin = "builtin"
		if err := out[i].Compile(); err != nil {
			panic(err) // a defect of the table, caught by its tests
		}
	}
	return out
}

// TriageFacts is what a rule is matched against, and what the timeline
// decides.
type TriageFacts struct {
	Template       string
	Example        string
	ExceptionTypes []string
	Frameworks     []string
	Newest         *time.Time
	RedrivesMax    int64
}

// TriageDecision is the suggested action for a group, with the rule that
// chose it and why.
type TriageDecision struct {
	Kind      string `json:"kind" yaml:"kind"` // transient, permanent, fixable, unknown
	Action    string `json:"action" yaml:"action"`
	Rule      string `json:"rule" yaml:"rule"`
	Why       string `json:"why" yaml:"why"`
	Transform string `json:"transform,omitempty" yaml:"transform,omitempty"`
	// Arriving: the group had a new dead letter within the quiet time.
	Arriving bool `json:"arriving" yaml:"arriving"`
}

// match reports whether r matches facts, and the field its reason names.
func (r *TriageRule) match(f TriageFacts) (bool, string) {
	field := ""
	if r.reason != nil {
		ok := false
		for _, text := range []string{f.Example, f.Template} {
			if text == "" {
				continue
			}
			if m := r.reason.FindStringSubmatch(text); m != nil {
				ok = true
				for i, name := range r.reason.SubexpNames() {
					if name == "field" && m[i] != "" {
						field = m[i]
						break
					}
				}
				break
			}
		}
		if !ok {
			return false, ""
		}
	}
	if r.typ != nil && !anyMatch(f.ExceptionTypes, r.typ.MatchString) {
		return false, ""
	}
	if r.Framework != "" && !anyMatch(f.Frameworks, func(s string) bool { return strings.EqualFold(s, r.Framework) }) {
		return false, ""
	}
	return true, field
}

func anyMatch(vals []string, ok func(string) bool) bool {
	for _, v := range vals {
		if ok(v) {
			return true
		}
	}
	return false
}

// Decide places a group with the first rule that matches it and picks its
// action: a transient group is redriven when it stopped arriving (no new
// dead letter for quiet), waited for while it arrives, and looked at when
// dlq redrove it RedriveLoopLimit times already; a fixable group gets a
// transform skeleton; a permanent group is parked. A group no rule places
// is looked at: an unknown failure is never guessed into a destructive
// action.
func Decide(f TriageFacts, rules []TriageRule, quiet time.Duration, now time.Time) TriageDecision {
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	d := TriageDecision{Arriving: f.Newest == nil || now.Sub(*f.Newest) < quiet}
	for i := range rules {
		r := &rules[i]
		ok, field := r.match(f)
		if !ok {
			continue
		}
		d.Kind, d.Rule, d.Why = r.Kind, r.Name, r.Why
		switch r.Kind {
		case KindTransient:
			switch {
			case f.RedrivesMax >= RedriveLoopLimit:
				d.Action = ActionLook
				d.Why += fmt.Sprintf("; but redriven %d times and back each time: find why before another redrive", f.RedrivesMax)
			case f.Newest == nil:
				d.Action = ActionWait
				d.Why += "; its messages carry no time, so whether it stopped is unknown"
			case d.Arriving:
				d.Action = ActionWait
				d.Why += fmt.Sprintf("; still arriving (last %s ago, within %s): its cause is still there", human.Age(now.Sub(*f.Newest)), human.Age(quiet))
			default:
				d.Action = ActionRedrive
				d.Why += fmt.Sprintf("; stopped arriving %s ago", human.Age(now.Sub(*f.Newest)))
			}
		case KindFixable:
			d.Action = ActionFix
			d.Transform = strings.ReplaceAll(r.Transform, "{field}", field)
			if d.Transform == "" {
				d.Transform = TransformTodo
			}
		case KindPermanent:
			d.Action = ActionPark
		}
		return d
	}
	d.Kind, d.Action, d.Rule, d.Why = "unknown", ActionLook, "none", "no rule places this failure"
	return d
}
