package topology

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// maxSpecSize bounds a spec file; real topologies are a few kilobytes.
const maxSpecSize = 4 << 20

// ParseFile reads and parses a spec file. See Parse.
func ParseFile(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w: check `-f`", err)
	}
	return Parse(path, data)
}

// Parse parses and validates a spec. A malformed spec is a *SpecError whose
// problems carry file:line:column. file is used only in messages.
func Parse(file string, data []byte) (spec *Spec, err error) {
	defer func() {
		// The YAML parser must never take the process down on hostile input.
		if r := recover(); r != nil {
			spec, err = nil, &SpecError{Problems: []Problem{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: fmt.Sprintf("cannot parse: %v", r)}}}
		}
	}()
	fail := func(p Pos, format string, args ...any) (*Spec, error) {
		p.File = file
		return nil, &SpecError{Problems: []Problem{{Pos: p, Msg: fmt.Sprintf(format, args...)}}}
	}
	if len(data) > maxSpecSize {
		return fail(Pos{Line: 1, Col: 1}, "spec is larger than %d bytes", maxSpecSize)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return fail(Pos{Line: 1, Col: 1}, "spec is empty: start it with `version: 1`")
		}
		return nil, yamlError(file, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return fail(posOf(&extra), "spec holds more than one YAML document: keep one per file")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return fail(Pos{Line: 1, Col: 1}, "spec is empty: start it with `version: 1`")
		}
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return fail(posOf(root), "spec must be a mapping that starts with `version: 1`, not %s", describe(root))
	}
	if v := get(root, "version"); v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!int" && v.Value != strconv.Itoa(SpecVersion) {
		return fail(posOf(v), "spec version %s is not supported: this dlq reads `version: %d`", v.Value, SpecVersion)
	}
	c := &checker{file: file, budget: 200000}
	c.object(root, specSchemas().spec, 0)
	if len(c.problems) > 0 {
		return nil, &SpecError{Problems: c.problems}
	}
	s := &Spec{}
	if err := root.Decode(s); err != nil {
		return nil, yamlError(file, data, err)
	}
	s.File = file
	fillPositions(s, root, file)
	return s, nil
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// yamlError turns a yaml.v3 error into problems with positions. yaml.v3
// names the line; the column is where that line's content starts.
func yamlError(file string, data []byte, err error) error {
	var msgs []string
	if te, ok := err.(*yaml.TypeError); ok {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	se := &SpecError{}
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		p := Pos{File: file, Line: 1, Col: 1}
		if sm := yamlLine().FindStringSubmatch(m); sm != nil {
			p.Line, _ = strconv.Atoi(sm[1])
			p.Col = lineStart(data, p.Line)
			m = strings.TrimSpace(strings.Replace(m, sm[0]+":", "", 1))
			m = strings.TrimSpace(strings.Replace(m, sm[0], "", 1))
		}
		se.Problems = append(se.Problems, Problem{Pos: p, Msg: "invalid YAML: " + m})
	}
	return se
}

func lineStart(data []byte, line int) int {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return 1
	}
	l := lines[line-1]
	return len(l) - len(bytes.TrimLeft(l, " \t")) + 1
}

func get(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

func items(n *yaml.Node, key string) []*yaml.Node {
	s := get(n, key)
	if s == nil || s.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, len(s.Content))
	for i, e := range s.Content {
		out[i] = resolve(e)
	}
	return out
}

func fillPositions(s *Spec, root *yaml.Node, file string) {
	at := func(n *yaml.Node) Pos { p := posOf(n); p.File = file; return p }
	for _, t := range systems {
		if sec := get(root, t.Section); sec != nil {
			t.Positions(s, sec, at)
		}
	}
}
