package snataddr_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSNATAddr(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Firewall agent SNAT addresses")
}
