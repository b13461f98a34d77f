package sqlq

import (
	"os"
	"testing"
)

func TestZZDump(t *testing.T) {
	src, _ := os.ReadFile("../../store/pgstore/queries.sql")
	q, err := loadQueries(string(src), outboundDef.data, Dollar)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("/tmp/hot/claim.sql", []byte(q["Claim"].text), 0o644)
	t.Log(q["Claim"].names)
}
