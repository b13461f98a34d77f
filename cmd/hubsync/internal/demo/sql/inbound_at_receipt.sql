-- Inbound events stored processed at receipt and never claimed: the echoes of
-- our own writes that the receiver recognised.
SELECT COUNT(*) FROM _System_IntegrationInbound WHERE Status = 'processed' AND Attempt = 0;
