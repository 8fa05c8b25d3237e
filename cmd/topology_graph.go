package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dlq-tools/dlq/topology"
)

type topologyGraphOptions struct {
	f      *Factory
	File   string
	Format string
	Prefix string
}

func newCmdTopologyGraph(f *Factory, runF func(*topologyGraphOptions) error) *cobra.Command {
	opts := &topologyGraphOptions{f: f}
	c := &cobra.Command{
		Use:   "graph [-f SPEC]",
		Short: "Draw a spec, or what a broker has, as a Mermaid or Graphviz graph",
		Long: `Draw the topology: exchanges as hexagons, queues as cylinders, bindings as
arrows labelled with their keys, dead-letter and redrive routes dashed.
With -f it draws the spec; without, it reads the broker (--broker, narrowed
by --prefix).`,
		Example: `  dlq topology graph -f topology.yaml > topology.mmd
  dlq topology graph --broker amqp://ops@rabbit/shop --prefix orders. --format dot | dot -Tsvg > orders.svg`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			switch opts.Format {
			case topology.GraphMermaid, topology.GraphDot:
			default:
				return flagErrorf("unknown `--format` %q: use mermaid or dot", opts.Format)
			}
			if opts.File != "" && opts.Prefix != "" {
				return flagErrorf("`--prefix` narrows what is read from a broker: drop it, or drop `-f`")
			}
			if runF != nil {
				return runF(opts)
			}
			return topologyGraphRun(c.Context(), opts)
		},
	}
	c.Flags().StringVarP(&opts.File, "file", "f", "", "spec file (- for stdin); without it, the broker's topology")
	c.Flags().StringVar(&opts.Format, "format", topology.GraphMermaid, "mermaid or dot")
	_ = c.RegisterFlagCompletionFunc("format", choices(topology.GraphMermaid, topology.GraphDot))
	c.Flags().StringVar(&opts.Prefix, "prefix", "", "with a broker: only objects whose names start with this")
	return c
}

func topologyGraphRun(ctx context.Context, opts *topologyGraphOptions) error {
	f := opts.f
	var m *topology.Model
	var err error
	if opts.File != "" {
		if m, err = loadTopology(f, opts.File); err != nil {
			return err
		}
	} else {
		spec, brokerName, err := exportBroker(ctx, f, opts.Prefix)
		if err != nil {
			return err
		}
		spec.File = brokerName
		if m, err = topology.Expand(spec); err != nil {
			return fmt.Errorf("read the broker's topology: %w", err)
		}
	}
	return topology.WriteGraph(f.IO.Out, m, opts.Format)
}
