// Command firewall-agent runs on a firewall machine and programs its nftables
// ruleset from the sources in its config file.
package main

import (
	"os"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app"
)

func main() {
	os.Exit(app.Main())
}
