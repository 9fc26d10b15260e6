package app_test

import (
	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall-admission/app"
	"github.com/metal-firewall/gardener-extension-firewall/test/cmdtest"
)

var _ = cmdtest.DescribeVersionFlag("gardener-extension-firewall-admission", &app.Version, app.NewCommand)
