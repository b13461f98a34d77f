-- Outbound events of one record by status, to know when it reached HubSpot.
SELECT Status, COUNT(*) FROM _System_IntegrationOutbound
WHERE ObjectType = ? AND RecordID = ?
GROUP BY Status;
