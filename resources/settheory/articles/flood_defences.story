Engineers finished a new flood wall along the river Tay in Brackton last week.

The wall is two kilometres long and stands up to three metres high.

Homes in the lower town were flooded twice in the past five years.

Insurance companies had stopped offering cover to many households there.

The wall was tested on Thursday when the river rose after two days of heavy rain.

No water reached the streets behind it, the town's mayor said.

Residents hope insurers will now return to the area.

The project was paid for by the national government and the county council.

@highlight

Brackton's new flood wall holds back the river after heavy rain

@highlight

Residents hope insurers will return
