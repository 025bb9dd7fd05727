local t = {}
for i = 1, 10 do t[#t + 1] = i * i end
print("squares", table.concat(t, " "))
return t
