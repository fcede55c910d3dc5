module qualify.invalid/corpus/gostall

go 1.19
