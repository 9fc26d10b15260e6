// Package metalscale_test measures the extension's firewall job at scale:
// many firewall Extensions, the metal provider against the in-process
// metal-api, one kube-apiserver. It runs with BENCH_TABLE=true (make bench).
package metalscale_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMetalScale(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Metal Scale Bench")
}
