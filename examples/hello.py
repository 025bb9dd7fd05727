import statistics
data = [3, 1, 4, 1, 5, 9, 2, 6]
print("mean", statistics.mean(data))
sorted(data)
