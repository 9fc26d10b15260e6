package docs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	aclvalidation "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/acl/validation"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	fwvalidation "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/validation"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/config"
)

// Kinds of examples the documentation holds and this test checks.
const (
	kindAgentConfig = "agent config"
	kindFirewall    = "firewall providerConfig"
	kindACL         = "acl providerConfig"
	kindPolicy      = "ClusterwideNetworkPolicy"
)

// example is one checkable thing in a code block.
type example struct {
	block *block
	kind  string
	where string // path inside the block, e.g. spec.extensions[1].providerConfig
	raw   []byte // what the code under test is given
}

func (e *example) String() string {
	s := fmt.Sprintf("%s %s", e.block, e.kind)
	if e.where != "" {
		s += " at " + e.where
	}
	return s
}

var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// examplesOf finds the examples in a yaml or json block. A block in another
// language holds none; a yaml or json block that does not parse is an error
// unless it is marked skip.
func examplesOf(b *block) ([]*example, error) {
	if b.lang != "yaml" && b.lang != "yml" && b.lang != "json" {
		if b.marker != nil {
			return nil, fmt.Errorf("%s: example marker on a %q block; only yaml and json blocks are checked", b, b.lang)
		}
		return nil, nil
	}
	if b.marker != nil && b.marker.kind == markerSkip {
		return nil, nil
	}
	var examples []*example
	for _, doc := range documentSeparator.Split(b.text, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: not valid YAML (mark it <!-- example: skip \"why\" --> if that is meant): %w", b, err)
		}
		var tree any
		if err := json.Unmarshal(js, &tree); err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
		if top, ok := tree.(map[string]any); ok {
			_, typed := top["kind"]
			_, sources := top["sources"]
			_, controllers := top["controllers"]
			switch {
			case !typed && (sources || controllers):
				examples = append(examples, &example{block: b, kind: kindAgentConfig, raw: []byte(doc)})
				continue
			case top["kind"] == "ClusterwideNetworkPolicy" && top["apiVersion"] == fwv1alpha1.GroupName+"/v1alpha1":
				examples = append(examples, &example{block: b, kind: kindPolicy, raw: js})
				continue
			}
		}
		found, err := providerConfigs(b, tree, "")
		if err != nil {
			return nil, err
		}
		examples = append(examples, found...)
	}
	if b.marker != nil && len(examples) == 0 {
		return nil, fmt.Errorf("%s: marked %s, but holds no agent config, providerConfig or ClusterwideNetworkPolicy", b, b.marker.kind)
	}
	return examples, nil
}

// providerConfigs finds every extension entry (type firewall or acl with a
// providerConfig) in a Shoot, its spec or a list of extensions.
func providerConfigs(b *block, node any, path string) ([]*example, error) {
	var found []*example
	switch n := node.(type) {
	case map[string]any:
		if pc, ok := n["providerConfig"]; ok {
			kind := ""
			switch n["type"] {
			case constants.FirewallExtensionType:
				kind = kindFirewall
			case constants.ACLExtensionType:
				kind = kindACL
			}
			if kind != "" {
				raw, err := json.Marshal(pc)
				if err != nil {
					return nil, err
				}
				found = append(found, &example{block: b, kind: kind, where: join(path, "providerConfig"), raw: raw})
			}
		}
		for k, v := range n {
			sub, err := providerConfigs(b, v, join(path, k))
			if err != nil {
				return nil, err
			}
			found = append(found, sub...)
		}
	case []any:
		for i, v := range n {
			sub, err := providerConfigs(b, v, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			found = append(found, sub...)
		}
	}
	return found, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// validate runs the example through the code that reads it in production:
// the agent's config loader, the extension's providerConfig decoders (the
// garden admission and the seed controllers use the same), and the agent's
// policy validation.
func validate(e *example) error {
	switch e.kind {
	case kindAgentConfig:
		_, err := config.Parse(e.raw)
		return err
	case kindFirewall:
		_, err := fwvalidation.DecodeFirewallExtensionConfig(e.raw)
		return err
	case kindACL:
		_, errs := aclvalidation.Parse(e.raw, aclvalidation.Limits{})
		return errs.ToAggregate()
	case kindPolicy:
		p := &fwv1alpha1.ClusterwideNetworkPolicy{}
		strict, err := kjson.UnmarshalStrict(e.raw, p)
		if err != nil {
			return err
		}
		if len(strict) > 0 {
			return errors.Join(strict...)
		}
		return fwvalidation.ValidatePolicySpec(&p.Spec, field.NewPath("spec")).ToAggregate()
	}
	return fmt.Errorf("unknown example kind %q", e.kind)
}

// verdict is nil when the example behaves as its documentation says: valid
// when unmarked, refused with the documented message when marked error or
// not-built.
func verdict(e *example) error {
	err := validate(e)
	m := e.block.marker
	switch {
	case m == nil:
		if err != nil {
			return fmt.Errorf("%s is documented as valid but is refused: %w", e, err)
		}
	case m.kind == markerError || m.kind == markerNotBuilt:
		what := "an error"
		if m.kind == markerNotBuilt {
			what = "a feature this build does not have"
		}
		if err == nil {
			return fmt.Errorf("%s is documented as %s but is accepted", e, what)
		}
		for _, msg := range m.messages {
			if !strings.Contains(err.Error(), msg) {
				return fmt.Errorf("%s is refused, but not with the documented %q: %w", e, msg, err)
			}
		}
	}
	return nil
}
