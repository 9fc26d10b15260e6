package metrics_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics"
)

// fakeDevices returns fixed device counters, or an error.
type fakeDevices struct {
	devices []fwv1alpha1.DeviceStatistics
	err     error
}

func (f *fakeDevices) Devices() ([]fwv1alpha1.DeviceStatistics, error) { return f.devices, f.err }

var _ = Describe("device metrics", func() {
	It("reads every counter of every device at the scrape, and sums the traffic by side and direction", func() {
		src := &fakeDevices{devices: []fwv1alpha1.DeviceStatistics{
			{Name: "vrf3981", Internal: true, RxBytes: 2000, RxPackets: 20, RxErrors: 1, RxDropped: 2, TxBytes: 200, TxPackets: 2, TxErrors: 3, TxDropped: 4},
			{Name: "vrf104009", RxBytes: 100, RxPackets: 1, TxBytes: 1000, TxPackets: 10},
			{Name: "vlan2", RxBytes: 5, RxPackets: 1, TxBytes: 7, TxPackets: 1},
		}}
		m := metrics.New("v1", nil, nil)
		m.WatchDevices(src, nil)
		_, got := scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_devices_up`, 1.0))
		for series, v := range map[string]float64{
			`firewall_agent_device_receive_bytes_total{device="vrf3981",side="internal"}`:    2000,
			`firewall_agent_device_receive_packets_total{device="vrf3981",side="internal"}`:  20,
			`firewall_agent_device_receive_errors_total{device="vrf3981",side="internal"}`:   1,
			`firewall_agent_device_receive_drops_total{device="vrf3981",side="internal"}`:    2,
			`firewall_agent_device_transmit_bytes_total{device="vrf3981",side="internal"}`:   200,
			`firewall_agent_device_transmit_packets_total{device="vrf3981",side="internal"}`: 2,
			`firewall_agent_device_transmit_errors_total{device="vrf3981",side="internal"}`:  3,
			`firewall_agent_device_transmit_drops_total{device="vrf3981",side="internal"}`:   4,
			`firewall_agent_device_transmit_bytes_total{device="vrf104009",side="external"}`: 1000,
			`firewall_agent_traffic_bytes_total{direction="in",side="internal"}`:             2000,
			`firewall_agent_traffic_bytes_total{direction="out",side="internal"}`:            200,
			`firewall_agent_traffic_bytes_total{direction="in",side="external"}`:             105,
			`firewall_agent_traffic_bytes_total{direction="out",side="external"}`:            1007,
			`firewall_agent_traffic_packets_total{direction="in",side="external"}`:           2,
		} {
			Expect(got).To(HaveKeyWithValue(series, v), series)
		}

		By("following the counters")
		src.devices[0].RxBytes = 5000
		_, got = scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_traffic_bytes_total{direction="in",side="internal"}`, 5000.0))
	})

	It("has no direction without an internal device, and says when the counters cannot be read", func() {
		src := &fakeDevices{devices: []fwv1alpha1.DeviceStatistics{{Name: "eth0", RxBytes: 1}}}
		m := metrics.New("v1", nil, nil)
		m.WatchDevices(src, nil)
		_, got := scrape(m.Handler())
		Expect(got).To(HaveKey(`firewall_agent_device_receive_bytes_total{device="eth0",side="external"}`))
		Expect(got).NotTo(HaveKey(ContainSubstring("firewall_agent_traffic_")))

		src.err = errors.New("netlink: permission denied")
		_, got = scrape(m.Handler())
		Expect(got).To(HaveKeyWithValue(`firewall_agent_devices_up`, 0.0))
		Expect(got).NotTo(HaveKey(ContainSubstring("firewall_agent_device_receive")))
	})

	It("records nothing on nil metrics", func() {
		var m *metrics.Metrics
		Expect(func() { m.WatchDevices(&fakeDevices{}, nil) }).NotTo(Panic())
	})
})
