package broker

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Settings are what a person set for one broker, in neutral words: its
// reference, the fields of the context it came from by their config keys
// ("region", "management_url"; flags applied over them), and what every
// broker shares (a timeout, a logger, read-only mode). An adapter reads the
// fields it knows and ignores the rest.
type Settings struct {
	Ref     string // the broker reference: amqp://…, sqs://…, file://…, demo:
	Context string // the context it came from; "" for a URL
	// Fields holds the context's fields by config key; a field a flag set
	// has the flag's value. A true boolean is "true".
	Fields map[string]string
	// Lists holds the context's list fields ("nodes").
	Lists map[string][]string
	// FromFlag reports the fields a flag set rather than the context.
	FromFlag map[string]bool
	Timeout  time.Duration
	Logger   *slog.Logger
	// ReadOnly reports whether mutations are refused (asked only by an
	// adapter that opens differently then); nil: they are not.
	ReadOnly func() bool
	// LookupEnv reads the environment (os.LookupEnv); nil reads none.
	LookupEnv func(string) (string, bool)
}

// Field is the value of a context field, "" when unset.
func (s Settings) Field(key string) string { return s.Fields[key] }

// Env is the value of an environment variable, "" when unset.
func (s Settings) Env(name string) string {
	if s.LookupEnv == nil {
		return ""
	}
	v, _ := s.LookupEnv(name)
	return v
}

// With returns s with the field key set to value; s is not changed.
func (s Settings) With(key, value string) Settings {
	f := make(map[string]string, len(s.Fields)+1)
	for k, v := range s.Fields {
		f[k] = v
	}
	f[key] = value
	s.Fields = f
	return s
}

// Adapter is a broker package as the front end knows it: the references
// it answers to and how it opens them. Each adapter package returns its
// own (rabbitmq.Adapter, sqs.Adapter, archive.Adapter); the front end
// lists them in a Registry and knows no scheme itself.
type Adapter struct {
	Name string // "rabbitmq"
	// Schemes are the reference prefixes it answers to, as a person writes
	// them: "amqp://", "sqs://", "demo:".
	Schemes []string
	// About says in a few words what each scheme opens, in the order of
	// Schemes ("RabbitMQ over TLS"), for completion.
	About []string
	// Open connects to the broker s.Ref names.
	Open func(ctx context.Context, s Settings) (Broker, error)
	// URLSecrets: its references may carry a password (a warning says so
	// when one is typed on the command line).
	URLSecrets bool
	// QueueIn splits a reference of its own schemes that names queues
	// directly (file://PATH, demo:NAME) into the broker reference and the
	// queue; ok is false for a reference that names only a broker. Nil:
	// none does.
	QueueIn func(ref string) (brokerRef, queue string, ok bool)
	// QueueRef recognises a queue given by a reference of the adapter's
	// own that is no broker URL (an SQS queue URL or ARN) and returns the
	// settings of its broker, made from def: the default broker's settings
	// when they are this adapter's, else those the flags give. Nil: none.
	QueueRef func(ref string, def Settings) (Settings, bool)
	// QueueNoun names such a queue in messages: "an SQS queue".
	QueueNoun string
	// Example is the broker reference an example names: "sqs://REGION".
	Example string
	// Flags are the command-line settings it reads, each overriding one of
	// its context fields (--region, --management-url).
	Flags []Flag
	// Lists names the list fields of a context that only it reads, and
	// what they list: "nodes" → "RabbitMQ nodes". A context of another
	// broker that sets one is refused.
	Lists map[string]string
	// Files: its references are a scheme and a local file's path
	// (file://PATH, read by LocalPath): completion offers the paths after
	// the scheme, and a front end checks the file one names.
	Files bool
	// Target opens a reference of its own as a destination to write to
	// (an archive file) and returns the destination as it is recorded; nil:
	// its references are brokers, and a destination on them follows `#`.
	Target func(s Settings, generator string) (Broker, string, error)
}

// Flag is a setting an adapter reads from the command line: it overrides
// the context field Field for every broker of the adapter.
type Flag struct {
	Option Option // its name: OptRegion
	Field  string // the context field it overrides: "region"
	Usage  string
	Bool   bool // a switch: it sets the field to "true"
	// Env, when set, is the environment variable that gives its value
	// when the broker itself comes from the environment (DLQ_BROKER).
	Env string
	// Values are its completions, "value\tdescription".
	Values []string
}

// Registry is the adapters a front end can open, in the order its
// messages list them.
type Registry struct{ adapters []Adapter }

// NewRegistry lists adapters.
func NewRegistry(adapters ...Adapter) *Registry {
	r := &Registry{}
	for _, a := range adapters {
		r.Register(a)
	}
	return r
}

// Register adds an adapter; a scheme registered twice keeps its first.
func (r *Registry) Register(a Adapter) { r.adapters = append(r.adapters, a) }

// Lookup is the adapter whose scheme ref has (case-insensitive).
func (r *Registry) Lookup(ref string) (Adapter, bool) {
	scheme, _, ok := strings.Cut(ref, ":")
	if !ok {
		return Adapter{}, false
	}
	for _, a := range r.adapters {
		for _, s := range a.Schemes {
			if name, _, _ := strings.Cut(s, ":"); strings.EqualFold(name, scheme) {
				return a, true
			}
		}
	}
	return Adapter{}, false
}

// IsRef reports whether s is a broker reference rather than a context name:
// a URL, or a registered scheme.
func (r *Registry) IsRef(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	_, ok := r.Lookup(s)
	return ok
}

// QueueRef finds the adapter that recognises ref as a queue of its own
// (see Adapter.QueueRef); def is given the default broker's settings, or
// the flags' alone when the default broker is another adapter's.
func (r *Registry) QueueRef(ref string, def func(a Adapter) Settings) (Adapter, Settings, bool) {
	for _, a := range r.adapters {
		if a.QueueRef == nil {
			continue
		}
		if s, ok := a.QueueRef(ref, def(a)); ok {
			return a, s, true
		}
	}
	return Adapter{}, Settings{}, false
}

// Schemes lists every registered scheme as written ("amqp://, sqs://, …,
// demo:"), for messages.
func (r *Registry) Schemes() string {
	var out []string
	for _, a := range r.adapters {
		out = append(out, a.Schemes...)
	}
	return strings.Join(out, ", ")
}

// Described lists every registered scheme with what it opens, as
// completion offers them: "amqp://\tRabbitMQ".
func (r *Registry) Described() []string {
	var out []string
	for _, a := range r.adapters {
		out = append(out, described(a)...)
	}
	return out
}

// described lists a's schemes with what each opens.
func described(a Adapter) []string {
	out := make([]string, len(a.Schemes))
	for i, s := range a.Schemes {
		if i < len(a.About) {
			s += "\t" + a.About[i]
		}
		out[i] = s
	}
	return out
}

// Scheme is the adapter and the scheme, as written, that ref starts with,
// compared as a person types it (case and all): for completion and a
// flag's first check, before the reference is opened.
func (r *Registry) Scheme(ref string) (Adapter, string, bool) {
	for _, a := range r.adapters {
		for _, s := range a.Schemes {
			if strings.HasPrefix(ref, s) {
				return a, s, true
			}
		}
	}
	return Adapter{}, "", false
}

// FilePath is the path a reference to a local file names: what follows
// the scheme of an adapter whose references are Files, as LocalPath reads
// it. ok is false for any other reference; the path may be empty.
func (r *Registry) FilePath(ref string) (path string, ok bool) {
	if a, s, ok := r.Scheme(ref); ok && a.Files {
		return LocalPath(ref[len(s):]), true
	}
	return "", false
}

// LocalPath is the file a reference's path names, the way every command
// reads it: "~/x" is in the home directory, and "localhost/x" is "/x" (a
// file URL's host).
func LocalPath(p string) string {
	if strings.HasPrefix(p, "localhost/") {
		p = p[len("localhost"):]
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	return p
}

// FileSchemes lists the schemes whose references are local files; with
// writable, those only that can be written to (a Target).
func (r *Registry) FileSchemes(writable bool) []string {
	var out []string
	for _, a := range r.adapters {
		if a.Files && (!writable || a.Target != nil) {
			out = append(out, a.Schemes...)
		}
	}
	return out
}

// Targets lists the schemes of the adapters that open a destination to
// write to (a Target), with what each opens, as completion offers them:
// "file://\tan archive file".
func (r *Registry) Targets() []string {
	var out []string
	for _, a := range r.adapters {
		if a.Target != nil {
			out = append(out, described(a)...)
		}
	}
	return out
}

// Flags lists the flags of every adapter, each name once, in the order the
// adapters declare them.
func (r *Registry) Flags() []Flag {
	var out []Flag
	seen := map[Option]bool{}
	for _, a := range r.adapters {
		for _, fl := range a.Flags {
			if !seen[fl.Option] {
				seen[fl.Option] = true
				out = append(out, fl)
			}
		}
	}
	return out
}

// ListOwner is the adapter that reads the context list field key (see
// Adapter.Lists) and what the field lists; ok is false when none does.
func (r *Registry) ListOwner(key string) (a Adapter, about string, ok bool) {
	for _, a := range r.adapters {
		if about, ok := a.Lists[key]; ok {
			return a, about, true
		}
	}
	return Adapter{}, "", false
}

// Same reports whether a and b are the same adapter.
func (a Adapter) Same(b Adapter) bool { return a.Name == b.Name }
