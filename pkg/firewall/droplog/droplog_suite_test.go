package droplog_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDropLog(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Firewall agent drop log")
}
