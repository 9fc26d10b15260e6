// Package v1alpha1 is the contract between the extension and the firewall
// agent: the agent's configuration file (the metal-stack MEP-16 shape, where
// each controller takes its rules from) and the paths of the agent's files on
// a firewall machine. The extension marshals Config into the machine's
// userdata; the agent decodes and validates it (pkg/firewall/config).
package v1alpha1
