package framework

import (
	"fmt"

	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal-firewall/gardener-extension-firewall/charts"
)

// RenderChart renders the extension's chart as gardenlet does for a seed of
// the test control plane's version, with the values an operator must give
// (the seed's URL) and gardenlet injects, and decodes every object.
func RenderChart(namespace, seedServer string) ([]client.Object, error) {
	renderer := chartrenderer.NewWithServerVersion(&version.Info{GitVersion: "v1.36.4", Major: "1", Minor: "36"})
	rc, err := renderer.RenderEmbeddedFS(charts.ChartFS, charts.ChartPath, "gardener-extension-firewall", namespace, map[string]any{
		"seedAPIServer": map[string]any{"url": seedServer},
		"gardener":      map[string]any{"seed": map[string]any{"name": "seed"}},
	})
	if err != nil {
		return nil, err
	}
	decoder := serializer.NewCodecFactory(kubernetes.SeedScheme).UniversalDeserializer()
	var out []client.Object
	for _, m := range rc.Manifests {
		obj, _, err := decoder.Decode([]byte(m.Content), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		out = append(out, obj.(client.Object))
	}
	return out, nil
}
