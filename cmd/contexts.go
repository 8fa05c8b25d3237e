package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/broker"
)

type contextsOptions struct {
	f *Factory
}

func newCmdContexts(f *Factory, runF func(*contextsOptions) error) *cobra.Command {
	opts := &contextsOptions{f: f}
	c := &cobra.Command{
		Use:   "contexts",
		Short: "List the named brokers of the config file",
		Long: `List the contexts of the config file ($XDG_CONFIG_HOME/dlq/config.yaml or
--config): name, broker, whether it is read-only, and which one is current.
See ` + "`dlq help brokers`" + ` for the file's keys.`,
		Example: "  dlq contexts\n  dlq contexts --output json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return contextsRun(opts)
		},
	}
	addOutputFlags(c, f, OutputTable, OutputJSON, OutputCSV)
	return c
}

type contextJSON struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	*BrokerContext
}

func contextsRun(opts *contextsOptions) error {
	f := opts.f
	format, err := outputFormat(f, OutputTable, OutputJSON, OutputCSV)
	if err != nil {
		return err
	}
	cfg, err := f.LoadConfig()
	if err != nil {
		return err
	}
	current := cfg.CurrentContext
	if f.Options.Context != "" {
		current = f.Options.Context
	}
	if format == OutputJSON {
		out := []contextJSON{}
		for _, n := range cfg.Names() {
			out = append(out, contextJSON{Name: n, Current: n == current, BrokerContext: cfg.Contexts[n]})
		}
		return writeJSON(f.IO.Out, out)
	}
	if len(cfg.Names()) == 0 && format == OutputTable {
		f.IO.Statusf("no contexts in %s: see `dlq help brokers` to add one", cfg.Path())
		return nil
	}
	t := NewTable("CURRENT", "NAME", "BROKER", "READ ONLY", "AUTH")
	for _, n := range cfg.Names() {
		c := cfg.Contexts[n]
		mark := ""
		if n == current {
			mark = "*"
		}
		ro := "no"
		if c.ReadOnly {
			ro = "yes"
		}
		auth := ""
		switch {
		case strings.EqualFold(c.Auth, "external"):
			auth = "certificate"
		case c.PasswordEnv != "":
			auth = "$" + c.PasswordEnv
		case c.Profile != "":
			auth = "profile " + c.Profile
		}
		t.Row(mark, n, broker.Redact(c.Broker), ro, auth)
	}
	if format == OutputCSV {
		return t.RenderCSV(f.IO.Out)
	}
	return t.Render(f.IO.Out, f.IO.ColorEnabled())
}
