package metrics

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// DeviceSource reads the counters of the firewall's interfaces; the agent
// is one.
type DeviceSource interface {
	Devices() ([]fwv1alpha1.DeviceStatistics, error)
}

// Sides, as the side label names them.
const (
	SideInternal = "internal"
	SideExternal = "external"
)

// WatchDevices has every scrape read the interfaces' counters from src.
func (m *Metrics) WatchDevices(src DeviceSource, log *slog.Logger) {
	if m == nil {
		return
	}
	m.registry.MustRegister(&deviceCollector{src: src, log: log})
}

// deviceCollector reads the counters at scrape time. The labels are the
// device and its side: bounded by the config's networks.
type deviceCollector struct {
	src DeviceSource
	log *slog.Logger
}

func deviceDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("firewall_agent_device_"+name, help, []string{"device", "side"}, nil)
}

var (
	deviceRxBytes   = deviceDesc("receive_bytes_total", "Bytes received on an interface of the firewall since it came up.")
	deviceRxPackets = deviceDesc("receive_packets_total", "Packets received on an interface.")
	deviceRxErrors  = deviceDesc("receive_errors_total", "Receive errors on an interface.")
	deviceRxDropped = deviceDesc("receive_drops_total", "Received packets an interface dropped.")
	deviceTxBytes   = deviceDesc("transmit_bytes_total", "Bytes sent on an interface of the firewall since it came up.")
	deviceTxPackets = deviceDesc("transmit_packets_total", "Packets sent on an interface.")
	deviceTxErrors  = deviceDesc("transmit_errors_total", "Transmit errors on an interface.")
	deviceTxDropped = deviceDesc("transmit_drops_total", "Packets an interface dropped instead of sending.")
	trafficBytes    = prometheus.NewDesc("firewall_agent_traffic_bytes_total",
		"Bytes through the firewall by side (internal: the interface facing the shoot's nodes; external: the others) and direction (in: received on that side, out: sent).",
		[]string{"side", "direction"}, nil)
	trafficPackets = prometheus.NewDesc("firewall_agent_traffic_packets_total",
		"Packets through the firewall by side and direction, as firewall_agent_traffic_bytes_total.", []string{"side", "direction"}, nil)
	devicesUp = prometheus.NewDesc("firewall_agent_devices_up", "Whether the interfaces' counters could be read at this scrape.", nil, nil)
)

func (c *deviceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{deviceRxBytes, deviceRxPackets, deviceRxErrors, deviceRxDropped,
		deviceTxBytes, deviceTxPackets, deviceTxErrors, deviceTxDropped, trafficBytes, trafficPackets, devicesUp} {
		ch <- d
	}
}

func (c *deviceCollector) Collect(ch chan<- prometheus.Metric) {
	devices, err := c.src.Devices()
	if err != nil {
		if c.log != nil {
			c.log.Error("reading the interfaces' counters for metrics", "error", err)
		}
		ch <- prometheus.MustNewConstMetric(devicesUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(devicesUp, prometheus.GaugeValue, 1)
	internal := false
	var bytes, packets [2][2]float64 // side (internal, external), direction (in, out)
	for _, d := range devices {
		side, s := SideExternal, 1
		if d.Internal {
			side, s, internal = SideInternal, 0, true
		}
		for _, v := range []struct {
			desc *prometheus.Desc
			n    uint64
		}{{deviceRxBytes, d.RxBytes}, {deviceRxPackets, d.RxPackets}, {deviceRxErrors, d.RxErrors}, {deviceRxDropped, d.RxDropped},
			{deviceTxBytes, d.TxBytes}, {deviceTxPackets, d.TxPackets}, {deviceTxErrors, d.TxErrors}, {deviceTxDropped, d.TxDropped}} {
			ch <- prometheus.MustNewConstMetric(v.desc, prometheus.CounterValue, float64(v.n), d.Name, side)
		}
		bytes[s][0] += float64(d.RxBytes)
		bytes[s][1] += float64(d.TxBytes)
		packets[s][0] += float64(d.RxPackets)
		packets[s][1] += float64(d.TxPackets)
	}
	if !internal {
		return // without the internal side, in and out cannot be told apart
	}
	for s, side := range []string{SideInternal, SideExternal} {
		for dir, direction := range []string{"in", "out"} {
			ch <- prometheus.MustNewConstMetric(trafficBytes, prometheus.CounterValue, bytes[s][dir], side, direction)
			ch <- prometheus.MustNewConstMetric(trafficPackets, prometheus.CounterValue, packets[s][dir], side, direction)
		}
	}
}
