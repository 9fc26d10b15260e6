package imagebuild_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	// The specs build cmd/firewall-agent in a `go build` subprocess, which go
	// test's cache does not see; importing the agent's code makes the test
	// binary, and so the cache key, change whenever the agent does.
	_ "github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app"
)

func TestImageBuild(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Image Build Suite")
}
