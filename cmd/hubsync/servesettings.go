package main

import (
	"errors"
	"fmt"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/server"
)

// webhookSettings loads the mapping file and parses the signature versions and
// trusted proxies into cfg, naming the variable of any bad value.
func webhookSettings(cfg *server.Config, mappingPath, signatures, proxies string) error {
	var errs []error
	if mappingPath != "" {
		m, err := mapping.Load(mappingPath)
		if err != nil {
			errs = append(errs, fmt.Errorf("HUBSYNC_MAPPING/-mapping: %w", err))
		}
		cfg.Mapping = m
	}
	v, err := hubspot.ParseSignatureVersions(signatures)
	if err != nil {
		errs = append(errs, fmt.Errorf("HUBSYNC_WEBHOOK_SIGNATURES/-webhook-signatures %q: %w", signatures, err))
	}
	cfg.WebhookSignatures = v
	p, err := inbound.ParseTrustedProxies(proxies)
	if err != nil {
		errs = append(errs, fmt.Errorf("HUBSYNC_TRUSTED_PROXIES/-trusted-proxies: %w", err))
	}
	cfg.TrustedProxies = p
	return errors.Join(errs...)
}
