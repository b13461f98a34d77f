WITH RECURSIVE {{template "due" .}}
SELECT {{cols . "t"}} FROM {{.Table}} t JOIN cand ON cand.Id = t.Id
