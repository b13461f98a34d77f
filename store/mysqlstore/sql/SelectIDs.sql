SELECT {{cols . "t"}} FROM {{.Table}} t JOIN {{template "ids"}} ON t.Id = j.Id
