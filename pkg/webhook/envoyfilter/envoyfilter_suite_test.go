package envoyfilter_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestEnvoyFilter(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ACL EnvoyFilter Webhook Suite")
}
