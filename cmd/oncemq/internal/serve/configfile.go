package serve

import (
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// readConfigFile reads the YAML config file at path: a mapping whose keys are the flag names of
// serve's options, each with a scalar value, or a list of them for a repeatable setting. It
// returns one assignment per value, in file order, each with its line; an unknown key, a
// duplicate key or a value of the wrong shape is an error naming the file and line.
func readConfigFile(path string) ([]assignment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	var doc yaml.Node
	if err := yaml.NewDecoder(f).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty file sets nothing
		}
		return nil, fmt.Errorf("%s: %v", path, err) // yaml's message has the line
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: want a mapping of settings (key: value lines), not a %s", path, root.Line, kindName(root))
	}
	byKey := map[string]option{}
	for _, o := range options {
		byKey[o.flag] = o
	}
	var out []assignment
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		at := fmt.Sprintf("%s:%d", path, k.Line)
		o, ok := byKey[k.Value]
		switch {
		case k.Kind != yaml.ScalarNode || !ok:
			return nil, fmt.Errorf("%s: unknown key %q (keys are the flag names of oncemq serve --help)", at, k.Value)
		case k.Value == "config":
			return nil, fmt.Errorf("%s: key config: a config file cannot name another one", at)
		case seen[k.Value] != 0:
			return nil, fmt.Errorf("%s: key %s is already set on line %d", at, k.Value, seen[k.Value])
		}
		seen[k.Value] = k.Line
		values, err := configValues(o, v)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: key %s: %v", path, v.Line, k.Value, err)
		}
		for _, n := range values {
			out = append(out, assignment{opt: o, value: n.Value, origin: fmt.Sprintf("%s:%d", path, n.Line)})
		}
	}
	return out, nil
}

// configValues are the scalar nodes of v: v itself, or the items of a list for a repeatable
// option.
func configValues(o option, v *yaml.Node) ([]*yaml.Node, error) {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return nil, errors.New("has no value")
	case v.Kind == yaml.ScalarNode:
		return []*yaml.Node{v}, nil
	case v.Kind == yaml.SequenceNode && o.repeatable():
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: a list item must be a single value", item.Line)
			}
		}
		return v.Content, nil
	case v.Kind == yaml.SequenceNode:
		return nil, errors.New("takes one value, not a list")
	default:
		return nil, fmt.Errorf("want a single value, not a %s", kindName(v))
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	default:
		return "value"
	}
}
