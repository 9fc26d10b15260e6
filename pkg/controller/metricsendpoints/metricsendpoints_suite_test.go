package metricsendpoints_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMetricsEndpoints(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Metrics Endpoints Suite")
}
