// Package metricstest reads metrics as the agent serves them, for tests.
package metricstest

import (
	"fmt"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse reads the Prometheus text format into one value per series, keyed
// as the text names it: name{label="value",...} with the labels sorted;
// histograms as their _bucket{le=...}, _sum and _count series.
func Parse(text string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := labelText(m.GetLabel(), "", "")
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name+labels] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name+labels] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[name+labels] = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[name+"_count"+labels] = float64(h.GetSampleCount())
				out[name+"_sum"+labels] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[name+"_bucket"+labelText(m.GetLabel(), "le", fmt.Sprint(b.GetUpperBound()))] = float64(b.GetCumulativeCount())
				}
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				out[name+"_count"+labels] = float64(s.GetSampleCount())
				out[name+"_sum"+labels] = s.GetSampleSum()
			}
		}
	}
	return out, nil
}

func labelText(pairs []*dto.LabelPair, extraName, extraValue string) string {
	var parts []string
	for _, p := range pairs {
		parts = append(parts, fmt.Sprintf("%s=%q", p.GetName(), p.GetValue()))
	}
	if extraName != "" {
		parts = append(parts, fmt.Sprintf("%s=%q", extraName, extraValue))
	}
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}
