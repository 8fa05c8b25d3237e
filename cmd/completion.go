package cmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
	"github.com/dlq-tools/dlq/inspect"
)

// Shell completion. The shell scripts of `dlq completion bash|zsh|fish|
// powershell` call the hidden `dlq __complete ARGS… PARTIAL`, which runs the
// functions below. They never prompt and never change anything: they only
// list names, with every broker call bounded by completionTimeout, and
// answer nothing (ShellCompDirectiveNoFileComp, no candidates) when
// anything fails. Nothing is written to stderr while completing (see
// execute).

// completionTimeout bounds everything one completion asks of a broker,
// connecting included.
const completionTimeout = time.Second

const noFile = cobra.ShellCompDirectiveNoFileComp

// completing reports whether args ask cobra for completions.
func completing(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// completionContext bounds a completion and caps --timeout, which the
// adapters also use for their own dials.
func (f *Factory) completionContext(c *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if f.Options.Timeout <= 0 || f.Options.Timeout > completionTimeout {
		f.Options.Timeout = completionTimeout
	}
	return context.WithTimeout(ctx, completionTimeout)
}

// queueNames lists the queues of b that start with prefix.
func queueNames(ctx context.Context, b broker.Broker, prefix string) []string {
	if n, ok := b.(broker.Namer); ok {
		names, err := n.QueueNames(ctx, prefix)
		if err != nil {
			return nil
		}
		return names
	}
	l, ok := b.(broker.QueueLister)
	if !ok {
		return nil
	}
	qs, err := l.Queues(ctx)
	if err != nil {
		return nil
	}
	var names []string
	for _, q := range qs {
		if strings.HasPrefix(q.Name, prefix) {
			names = append(names, q.Name)
		}
	}
	slices.Sort(names)
	return names
}

// exchangeNames lists the exchanges of b that start with prefix.
func exchangeNames(ctx context.Context, b broker.Broker, prefix string) []string {
	n, ok := b.(broker.ExchangeNamer)
	if !ok {
		return nil
	}
	names, err := n.ExchangeNames(ctx, prefix)
	if err != nil {
		return nil
	}
	return names
}

// takesQueue makes cmd a command of one QUEUE argument, completed with the
// broker's queue names: run is given the command, the argument and the
// output format, checked against those addOutputFlags declared for cmd.
func takesQueue(cmd *cobra.Command, f *Factory, run func(c *cobra.Command, queue, format string) error) {
	cmd.Args = cobra.ExactArgs(1)
	cmd.ValidArgsFunction = completeQueueArg(f)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		format, err := outputFormat(f, outputFormats(c)...)
		if err != nil {
			return err
		}
		return run(c, args[0], format)
	}
}

// completeQueueArg completes the QUEUE argument (the first one only):
// queue names on the default broker, and the references of an adapter that
// name queues directly: a file's path (file://PATH), or the queues of the
// broker it names (demo:NAME).
func completeQueueArg(f *Factory) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, noFile
		}
		ctx, cancel := f.completionContext(c)
		defer cancel()
		reg := f.adapters()
		if a, scheme, ok := reg.Scheme(toComplete); ok {
			switch {
			case a.Files:
				return completeFileURL(scheme, toComplete)
			case a.QueueIn != nil:
				ref, queue, ok := a.QueueIn(toComplete)
				if !ok {
					break
				}
				b, _, err := f.OpenQueue(ctx, ref)
				if err != nil {
					return nil, noFile
				}
				defer b.Close()
				return prefixed(strings.TrimSuffix(toComplete, queue), queueNames(ctx, b, queue)), noFile
			}
		}
		var out []string
		if b, err := f.OpenBroker(ctx); err == nil {
			out = queueNames(ctx, b, toComplete)
			b.Close()
		}
		if schemes := startingWith(reg.FileSchemes(false), toComplete); toComplete != "" && len(schemes) > 0 {
			return append(out, schemes...), noFile | cobra.ShellCompDirectiveNoSpace
		}
		return out, noFile
	}
}

// startingWith keeps the candidates that start with typed.
func startingWith(candidates []string, typed string) []string {
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, typed) {
			out = append(out, c)
		}
	}
	return out
}

// destinationKinds are the forms of a redrive destination on the source's
// broker, as candidates with a description; the adapters' targets (an
// archive file) follow them.
var destinationKinds = []string{
	"origin\twhere each message was dead-lettered from",
	"queue:\ta queue on the source's broker",
	"exchange:\ta RabbitMQ exchange on the source's broker",
}

// completeDestination completes `redrive --to`: origin, queue:NAME and
// exchange:NAME on the source's broker, and the adapters' targets
// (file://PATH).
func completeDestination(f *Factory) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx, cancel := f.completionContext(c)
		defer cancel()
		kind, name, named := strings.Cut(toComplete, ":")
		a, scheme, isRef := f.adapters().Scheme(toComplete)
		switch {
		case isRef && a.Files:
			return completeFileURL(scheme, toComplete)
		case named && (kind == "queue" || kind == "exchange"):
			b, err := f.sourceBroker(ctx, args)
			if err != nil {
				return nil, noFile
			}
			defer b.Close()
			if kind == "queue" {
				return prefixed("queue:", queueNames(ctx, b, name)), noFile
			}
			return prefixed("exchange:", exchangeNames(ctx, b, name)), noFile
		}
		out := startingWith(append(slices.Clip(destinationKinds), f.adapters().Targets()...), toComplete)
		return out, continues(out)
	}
}

// sourceBroker opens the broker of the command's QUEUE argument, or the
// default broker before one is given.
func (f *Factory) sourceBroker(ctx context.Context, args []string) (broker.Broker, error) {
	if len(args) > 0 {
		b, _, err := f.OpenQueue(ctx, args[0])
		return b, err
	}
	return f.OpenBroker(ctx)
}

// completeArchive completes a flag that names an archive to write: the
// path of a file an adapter writes to (file://PATH). It reads dlq's own
// adapters, as it has no factory.
func completeArchive(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	reg := dlqAdapters()
	if a, scheme, ok := reg.Scheme(toComplete); ok && a.Files && a.Target != nil {
		return completeFileURL(scheme, toComplete)
	}
	if schemes := startingWith(reg.FileSchemes(true), toComplete); len(schemes) > 0 {
		return schemes, noFile | cobra.ShellCompDirectiveNoSpace
	}
	return nil, noFile
}

// completeFileURL lists the entries of the directory that a partly typed
// SCHEME+PATH names (file://PATH), each after the scheme; directories end
// in a slash and keep the cursor after it. Hidden entries show only once a
// dot is typed.
func completeFileURL(scheme, toComplete string) ([]string, cobra.ShellCompDirective) {
	typed := strings.TrimPrefix(toComplete, scheme)
	dir, base := filepath.Split(typed)
	read := dir
	if read == "" {
		read = "."
	} else if strings.HasPrefix(read, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, noFile
		}
		read = filepath.Join(home, read[2:])
	}
	entries, err := os.ReadDir(read)
	if err != nil {
		return nil, noFile
	}
	var out []string
	dirs := false
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || (strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if st, err := os.Stat(filepath.Join(read, name)); err == nil {
				isDir = st.IsDir()
			}
		}
		if isDir {
			name += "/"
			dirs = true
		}
		out = append(out, scheme+dir+name)
	}
	if dirs {
		return out, noFile | cobra.ShellCompDirectiveNoSpace
	}
	return out, noFile
}

// groupKeys are the `--group-by` keys, from inspect.GroupKinds; a key that
// takes a name (header:NAME) is offered up to its colon.
func groupKeys() []string {
	var keys []string
	for _, k := range strings.Split(inspect.GroupKinds, ", ") {
		if i := strings.IndexByte(k, ':'); i >= 0 {
			k = k[:i+1]
		}
		keys = append(keys, k)
	}
	return keys
}

// completeGroupBy completes the comma-separated `--group-by` list: the keys
// not yet in it, after what is already typed.
func completeGroupBy(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done, last := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	have := map[string]bool{}
	for _, k := range strings.Split(done, ",") {
		have[k] = true
	}
	var out []string
	for _, k := range groupKeys() {
		if strings.HasPrefix(k, last) && !have[k] {
			out = append(out, done+k)
		}
	}
	return out, noFile | cobra.ShellCompDirectiveNoSpace
}

// completeOutput completes the global `--output` with the formats the
// command declared (addOutputFlags).
func completeOutput(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return outputFormats(c), noFile
}

// completeBroker completes `--broker`: context names, then the URL schemes
// (a file's, file://, with paths).
func completeBroker(f *Factory) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if a, scheme, ok := f.adapters().Scheme(toComplete); ok && a.Files {
			return completeFileURL(scheme, toComplete)
		}
		var out []string
		if cfg, err := f.LoadConfig(); err == nil {
			for _, n := range cfg.Names() {
				if strings.HasPrefix(n, toComplete) {
					out = append(out, n+"\tcontext")
				}
			}
		}
		for _, s := range f.adapters().Described() {
			if strings.HasPrefix(s, toComplete) {
				out = append(out, s)
			}
		}
		return out, continues(out)
	}
}

// completeContext completes `--context` with the config file's contexts.
func completeContext(f *Factory) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, err := f.LoadConfig()
		if err != nil {
			return nil, noFile
		}
		return cfg.Names(), noFile
	}
}

// continues keeps the cursor after the word (no space) when a candidate is
// only the start of one: a scheme such as sqs://, or queue:.
func continues(candidates []string) cobra.ShellCompDirective {
	for _, c := range candidates {
		c, _, _ = strings.Cut(c, "\t")
		if strings.HasSuffix(c, ":") || strings.HasSuffix(c, "/") {
			return noFile | cobra.ShellCompDirectiveNoSpace
		}
	}
	return noFile
}

// choices completes a flag with fixed values, those that start with what
// is typed.
func choices(values ...string) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var out []string
		for _, v := range values {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, noFile
	}
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}
