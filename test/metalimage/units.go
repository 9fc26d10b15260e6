package metalimage

import "fmt"

// Units the installer renders and enables after it processed the userdata
// (os-installer pkg/installer/installer.go "deploy systemd services", after
// "process userdata"; pkg/services/install.go), so a unit file of the same
// name from the userdata is overwritten; a drop-in stays.
const (
	FirewallControllerUnit = "firewall-controller.service"
	DroptailerUnit         = "droptailer.service"
)

// FirewallControllerService is firewall-controller's unit: in the default
// route's VRF, always restarted after 10 s (pkg/services/firewall-controller/
// firewall_controller.service.tpl).
func FirewallControllerService(a *Allocation) string {
	return fmt.Sprintf(`# created as metal-stack's os-installer renders it
[Unit]
Description=Firewall controller - configures the firewall based on k8s resources
After=network.target

[Service]
LimitMEMLOCK=infinity
Environment=KUBECONFIG=/etc/firewall-controller/.kubeconfig
ExecStart=/bin/ip vrf exec %s /usr/local/bin/firewall-controller
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
`, a.DefaultRouteVRF())
}

// DroptailerService is the droptailer client's unit: in the tenant VRF,
// wanted by firewall-controller (pkg/services/droptailer/droptailer.service.tpl).
func DroptailerService(a *Allocation) string {
	return fmt.Sprintf(`# created as metal-stack's os-installer renders it
[Unit]
Description=Droptailer
After=network.target

[Service]
LimitMEMLOCK=infinity
Environment=DROPTAILER_SERVER_ADDRESS=droptailer:50051
Environment=DROPTAILER_PREFIXES_OF_DROPS="nftables-metal-dropped: ,nftables-firewall-dropped: "
Environment=DROPTAILER_CLIENT_CERTIFICATE=/etc/droptailer-client/droptailer-client.crt
Environment=DROPTAILER_CLIENT_KEY=/etc/droptailer-client/droptailer-client.key
ExecStart=/bin/ip vrf exec %s /usr/local/bin/droptailer-client
Restart=always
RestartSec=10

[Install]
WantedBy=firewall-controller.service
`, a.TenantVRF())
}
