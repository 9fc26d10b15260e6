package csrapprover_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestCSRApprover(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Firewall CSR Approver Suite")
}
