// Package validation checks the firewall API types. The firewall agent uses it
// for its static configuration; the shoot's ClusterwideNetworkPolicy controller
// and admission use the same functions, so a policy means the same everywhere.
package validation
