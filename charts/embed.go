// Package charts embeds the extension's Helm charts, so that tests render exactly what is
// committed and the registration generator packs exactly that.
package charts

import "embed"

// ChartPath is the seed chart's folder inside ChartFS (and inside this folder).
const ChartPath = "gardener-extension-firewall"

// AdmissionChartPath is the garden admission's chart folder inside ChartFS.
const AdmissionChartPath = "gardener-extension-firewall-admission"

// ChartFS holds the charts; `all:` keeps templates/_helpers.tpl, which embed skips otherwise.
//
//go:embed all:gardener-extension-firewall all:gardener-extension-firewall-admission
var ChartFS embed.FS
