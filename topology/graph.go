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
	if r := m.Rabbit; r != nil {
		xid := func(name string) string {
			t := "exchange"
			for _, x := range r.Exchanges {
				if x.Name == name {
					t = x.Type
				}
			}
			label := name
			if name == "" {
				label = "(default exchange)"
			}
			return g.node("x:"+name, label+"\n"+t, "exchange")
		}
		for _, x := range r.Exchanges {
			xid(x.Name)
		}
		for _, q := range r.Queues {
			e := effectiveOf(q, r)
			label := q.Name + "\n" + q.Kind
			if e.ttl != nil {
				label += fmt.Sprintf(", ttl %s", FormatDuration(msDuration(*e.ttl)))
			}
			if e.limit != nil {
				label += fmt.Sprintf(", delivery limit %d", *e.limit)
			}
			if e.retry != "" {
				label += ", delayed retry " + e.retry
			}
			qid := g.node("q:"+q.Name, label, "queue")
			if e.dlx != nil {
				l := "dead-letter"
				if e.dlrk != nil {
					l += ": " + *e.dlrk
				}
				if e.policy != "" && q.Arguments["x-dead-letter-exchange"] == nil {
					l += " (policy)"
				}
				g.edges = append(g.edges, gEdge{from: qid, to: xid(*e.dlx), label: l, dead: true})
			}
		}
		for _, b := range r.Bindings {
			from := xid(b.Source)
			var to string
			if b.DestinationType == "exchange" {
				to = xid(b.Destination)
			} else {
				to = g.node("q:"+b.Destination, b.Destination, "queue")
			}
			g.edges = append(g.edges, gEdge{from: from, to: to, label: b.RoutingKey})
		}
	}
	if s := m.SQS; s != nil {
		for _, q := range s.Queues {
			label := q.Name + "\nsqs"
			if q.FIFO {
				label = q.Name + "\nsqs fifo"
			}
			if d := q.Attributes["DelaySeconds"]; d != "" && d != "0" {
				label += ", delay " + d + "s"
			}
			g.node("s:"+q.Name, label, "queue")
		}
		for _, q := range s.Queues {
			if q.DeadLetter != nil {
				to := g.node("s:"+q.DeadLetter.Queue, q.DeadLetter.Queue+"\nsqs", "queue")
				g.edges = append(g.edges, gEdge{from: g.ids["s:"+q.Name], to: to,
					label: fmt.Sprintf("after %d receives", q.DeadLetter.MaxReceiveCount), dead: true})
			}
		}
		for _, l := range s.Ladders {
			main := g.ids["s:"+l.Main]
			for i, t := range l.Tiers {
				g.edges = append(g.edges, gEdge{from: main, to: g.ids["s:"+t], label: fmt.Sprintf("retry %d (consumer)", i+1)})
			}
		}
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
