module github.com/sluice-search/sluice

go 1.26.8
