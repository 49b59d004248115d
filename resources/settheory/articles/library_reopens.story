The central library in Daleford reopened on Saturday after an eighteen-month renovation.

Builders replaced the leaking roof and added a reading room on the top floor.

More than two thousand people visited on the first day, according to the library's staff.

Children's author Maria Okafor read from her new book in the main hall.

The library now stays open until eight o'clock on weekdays.

Its collection of local newspapers has been digitised and can be searched online.

The renovation cost 6.2 million pounds, most of it paid by a national heritage fund.

Residents had campaigned for years to save the building from closure.

@highlight

Daleford's central library reopens after renovation

@highlight

Two thousand visitors came on the first day
