// console script
