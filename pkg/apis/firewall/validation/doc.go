// Package validation checks the firewall API's objects. Every error names the
// field path and the value, so the manager, the agent and admission report the
// same message; nothing is applied from an object that fails validation.
package validation
