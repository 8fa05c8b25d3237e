package topology

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Graph formats.
const (
	GraphMermaid = "mermaid"
	GraphDot     = "dot"
)

type gNode struct {
	id, label, shape string // shape: exchange, queue
}

type gEdge struct {
	from, to, label string
	dead            bool // a dead-letter or redrive edge (dashed)
}

type graph struct {
	nodes []gNode
	ids   map[string]string
	edges []gEdge
}

func (g *graph) node(key, label, shape string) string {
	if id, ok := g.ids[key]; ok {
		return id
	}
	id := fmt.Sprintf("n%d", len(g.nodes))
	g.ids[key] = id
	g.nodes = append(g.nodes, gNode{id: id, label: label, shape: shape})
	return id
}

func buildGraph(m *Model) *graph {
	g := &graph{ids: map[string]string{}}
	for _, t := range systems {
		t.Graph(g, m)
	}
	return g
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// WriteGraph draws the model as a Mermaid flowchart or a Graphviz digraph.
// Exchanges are hexagons, queues cylinders; dead-letter and redrive edges
// are dashed.
func WriteGraph(w io.Writer, m *Model, format string) error {
	g := buildGraph(m)
	var b strings.Builder
	switch format {
	case GraphMermaid, "":
		b.WriteString("flowchart LR\n")
		for _, n := range g.nodes {
			label := mermaidText(n.label)
			if n.shape == "exchange" {
				fmt.Fprintf(&b, "  %s{{\"%s\"}}\n", n.id, label)
			} else {
				fmt.Fprintf(&b, "  %s[(\"%s\")]\n", n.id, label)
			}
		}
		for _, e := range g.edges {
			arrow := "-->"
			if e.dead {
				arrow = "-.->"
			}
			if e.label != "" {
				fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", e.from, arrow, mermaidText(e.label), e.to)
			} else {
				fmt.Fprintf(&b, "  %s %s %s\n", e.from, arrow, e.to)
			}
		}
	case GraphDot:
		b.WriteString("digraph topology {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n")
		for _, n := range g.nodes {
			shape := "cylinder"
			if n.shape == "exchange" {
				shape = "hexagon"
			}
			fmt.Fprintf(&b, "  %s [shape=%s, label=%s];\n", n.id, shape, dotText(n.label))
		}
		for _, e := range g.edges {
			attrs := []string{"label=" + dotText(e.label)}
			if e.dead {
				attrs = append(attrs, "style=dashed", "color=red")
			}
			fmt.Fprintf(&b, "  %s -> %s [%s];\n", e.from, e.to, strings.Join(attrs, ", "))
		}
		b.WriteString("}\n")
	default:
		return fmt.Errorf("unknown graph format %q: use mermaid or dot", format)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mermaidText(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "\n", "<br/>", "|", "#124;", "<", "#lt;", ">", "#gt;")
	return r.Replace(s)
}

func dotText(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
