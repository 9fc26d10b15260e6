package charts_test

import (
	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/charts"
)

const (
	releaseName = "gardener-extension-firewall"
	// namespace is what gardenlet names an extension's namespace: extension-<registration>-<hash>.
	namespace = "extension-firewall-x7k2p"
	seedURL   = "https://api.seed-a.example.com"
)

// renderer renders as gardenlet does (gardener's chartrenderer, the helm library).
var renderer = chartrenderer.NewWithServerVersion(&version.Info{GitVersion: "v1.34.0", Major: "1", Minor: "34"})

// strict refuses unknown fields, so a misspelt key in a template fails the tests.
var strict = serializer.NewCodecFactory(kubernetes.SeedScheme, serializer.EnableStrict).UniversalDeserializer()

// minimalValues are the chart's defaults plus what it requires and what gardenlet injects.
func minimalValues() map[string]any {
	return map[string]any{
		"seedAPIServer": map[string]any{"url": seedURL},
		"gardener":      map[string]any{"seed": map[string]any{"name": "seed-a"}},
	}
}

// with returns values with one more value set at the dotted path.
func with(values map[string]any, path []string, value any) map[string]any {
	m := values
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
	return values
}

func render(values map[string]any) (*chartrenderer.RenderedChart, error) {
	return renderer.RenderEmbeddedFS(charts.ChartFS, charts.ChartPath, releaseName, namespace, values)
}

// objects renders and decodes every manifest strictly into its typed object.
func objects(values map[string]any) []client.Object {
	rc, err := render(values)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return decode(rc)
}

func decode(rc *chartrenderer.RenderedChart) []client.Object {
	var out []client.Object
	for _, m := range rc.Manifests {
		obj, _, err := strict.Decode([]byte(m.Content), nil, nil)
		ExpectWithOffset(2, err).NotTo(HaveOccurred(), "manifest %s:\n%s", m.Name, m.Content)
		out = append(out, obj.(client.Object))
	}
	return out
}

// find returns the one object of the type and name, or nil.
func find[T client.Object](objs []client.Object, name string) T {
	var zero T
	for _, o := range objs {
		if t, ok := o.(T); ok && o.GetName() == name {
			return t
		}
	}
	return zero
}

// kindsAndNames lists "Kind/name" of every object.
func kindsAndNames(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		gvks, _, err := kubernetes.SeedScheme.ObjectKinds(o)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		out = append(out, gvks[0].Kind+"/"+o.GetName())
	}
	return out
}

// Object is a rendered, decoded object.
type Object = client.Object
