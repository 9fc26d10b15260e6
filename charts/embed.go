// Package charts embeds the extension's Helm chart, so that tests render exactly what is
// committed and the registration generator packs exactly that.
package charts

import "embed"

// ChartPath is the chart's folder inside ChartFS (and inside this folder).
const ChartPath = "gardener-extension-firewall"

// ChartFS holds the chart; `all:` keeps templates/_helpers.tpl, which embed skips otherwise.
//
//go:embed all:gardener-extension-firewall
var ChartFS embed.FS
