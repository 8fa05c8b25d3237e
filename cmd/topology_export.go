package cmd

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/topology"
)

type topologyExportOptions struct {
	f      *Factory
	Vhost  string
	Prefix string
	Out    string
}

func newCmdTopologyExport(f *Factory, runF func(*topologyExportOptions) error) *cobra.Command {
	opts := &topologyExportOptions{f: f}
	c := &cobra.Command{
		Use:   "export",
		Short: "Write a broker's topology as a spec file",
		Long: `Read every exchange, queue, binding and policy of a RabbitMQ vhost (leaving out
the built-in amq.* exchanges and server-named queues), or every SQS queue of
the account and region with its attributes, and write it in the spec format
(the low-level form: exchanges, queues, bindings, policies; SQS queues with
dead_letter and redrive_allow by name). Planning the result against the same
broker shows no changes.

--prefix keeps objects whose names start with it (and the policies that
apply to them). --vhost reads another vhost of the same RabbitMQ server.`,
		Example: `  dlq topology export --broker amqp://ops@rabbit/shop > shop.yaml
  dlq topology export --broker amqp://ops@rabbit/ --vhost shop --prefix orders.
  dlq topology export --broker sqs://eu-west-1 --prefix payments- --file payments.yaml`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Vhost != "" {
				if err := setBrokerVhost(f, opts.Vhost); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return topologyExportRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Vhost, "vhost", "", "RabbitMQ vhost to export (default: the one in the broker URL)")
	c.Flags().StringVar(&opts.Prefix, "prefix", "", "only objects whose names start with this")
	c.Flags().StringVar(&opts.Out, "file", "", "write to this file instead of stdout")
	addOutputFlags(c, f, "yaml", OutputJSON)
	return c
}

// setBrokerVhost points an amqp:// `--broker` URL at another vhost.
func setBrokerVhost(f *Factory, vhost string) error {
	raw := f.Options.Broker
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") {
		return flagErrorf("`--vhost` needs `--broker amqp://…` (or put the vhost in the broker URL of the context)")
	}
	u.Path = "/" + vhost
	u.RawPath = "/" + url.PathEscape(vhost)
	f.Options.Broker = u.String()
	return nil
}

// exportBroker reads the topology the broker has now, of the objects whose
// names start with prefix; name is the broker as it is shown.
func exportBroker(ctx context.Context, f *Factory, prefix string) (spec *topology.Spec, name string, err error) {
	b, err := f.OpenBroker(ctx)
	if err != nil {
		return nil, "", err
	}
	defer b.Close()
	ectx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	spec, err = topology.Export(ectx, b, topology.ExportOptions{Prefix: prefix})
	return spec, b.String(), err
}

func topologyExportRun(ctx context.Context, opts *topologyExportOptions) error {
	f := opts.f
	format, err := outputFormat(f, "yaml", OutputJSON)
	if err != nil {
		return err
	}
	spec, brokerName, err := exportBroker(ctx, f, opts.Prefix)
	if err != nil {
		return err
	}
	var data []byte
	if format == OutputJSON {
		var sb strings.Builder
		if err := writeJSON(&sb, spec); err != nil {
			return err
		}
		data = []byte(sb.String())
	} else {
		header := fmt.Sprintf("dlq topology export of %s", brokerName)
		if opts.Prefix != "" {
			header += fmt.Sprintf(" (names starting with %q)", opts.Prefix)
		}
		header += "\n" + f.Now().UTC().Format(time.RFC3339) + "; see `dlq help topology-spec`"
		if data, err = topology.MarshalSpec(spec, header); err != nil {
			return err
		}
	}
	if opts.Out != "" {
		if err := os.WriteFile(opts.Out, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w: check `--file`", opts.Out, err)
		}
		f.IO.Statusf("wrote %s", opts.Out)
		return nil
	}
	_, err = f.IO.Out.Write(data)
	return err
}
