package cmd

import (
	"os"
	"time"

	"github.com/spf13/cobra"
)

// NewRootCmd builds the `dlq` command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	o := f.Options
	root := &cobra.Command{
		Use:   "dlq",
		Short: "Operate dead-letter queues on RabbitMQ and Amazon SQS",
		Long: `dlq inspects, redrives and declares dead-letter queues on RabbitMQ and
Amazon SQS, and on local archive files.

Brokers are named with --broker (or a context from the config file):
  amqp://user@host:5672/vhost   amqps://…      RabbitMQ (password from the URL or DLQ_PASSWORD)
  sqs://                         sqs://REGION  Amazon SQS (AWS config chain; --endpoint-url)
  file://dead-letters.jsonl[.gz]               an archive written by dlq export
  demo:                                        the embedded sample archive`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			if o.NoColor {
				f.IO.SetColor(false)
			}
			if o.Timeout <= 0 && c.Flags().Changed("timeout") {
				return flagErrorf("`--timeout %s`: give a positive duration such as 30s, or leave the flag out for the default 30s", o.Timeout)
			}
			f.countJSON()
			return f.startJQ()
		},
	}
	pf := root.PersistentFlags()
	pf.StringVarP(&o.Broker, "broker", "b", "", "broker URL (amqp://, amqps://, sqs://, file://, demo:) or context name")
	pf.StringVar(&o.Context, "context", os.Getenv("DLQ_CONTEXT"), "named context from the config file (env DLQ_CONTEXT)")
	pf.StringVar(&o.ConfigPath, "config", "", "config file (default $XDG_CONFIG_HOME/dlq/config.yaml)")
	pf.StringVarP(&o.Output, "output", "o", "", "output format: table, json, csv (and others where a command says so)")
	pf.BoolVar(&o.ReadOnly, "read-only", false, "refuse every command that changes a broker (exit code 4)")
	pf.BoolVarP(&o.Yes, "yes", "y", false, "answer yes to confirmations (required without a terminal)")
	pf.BoolVar(&o.NoColor, "no-color", false, "disable colour (also NO_COLOR)")
	pf.DurationVar(&o.Timeout, "timeout", 30*time.Second, "timeout for connecting and for each broker call")
	pf.BoolVar(&o.Quiet, "quiet", false, "no warnings about how dlq is called (such as a password in a URL)")
	pf.StringVar(&o.AuditLog, "audit-log", "", "audit log file (default $XDG_STATE_HOME/dlq/audit.jsonl)")

	_ = root.RegisterFlagCompletionFunc("broker", completeBroker(f))
	_ = root.RegisterFlagCompletionFunc("context", completeContext(f))
	_ = root.RegisterFlagCompletionFunc("output", completeOutput)
	// The flags each adapter reads (--region, --management-url, …).
	for _, fl := range f.adapters().Flags() {
		pflag := pf.VarPF(&adapterFlag{o: o, fl: fl}, string(fl.Option), "", fl.Usage)
		if fl.Bool {
			pflag.NoOptDefVal, pflag.DefValue = "true", "false"
		}
		if len(fl.Values) > 0 {
			_ = root.RegisterFlagCompletionFunc(string(fl.Option), cobra.FixedCompletions(fl.Values, cobra.ShellCompDirectiveNoFileComp))
		}
	}

	addCommands(root, f)
	// Unknown flags and bad flag values are a FlagError: the usage follows.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err: err} })
	return root
}
